/**
 * `hookrelay`: the library. Send messages from your own application, inside your own
 * transaction, and sign or check webhooks. It loads no HTTP server, no embedded database
 * and no CLI, and sets nothing process-wide; the server is `hookrelay/server`.
 */
export { generateSecret, secretKey, signatureHeader } from "./delivery/sign.ts";
export { ConfigError, DatabaseError, HookRelayError } from "./errors.ts";
export {
  type EnqueueResult,
  HookRelay,
  type HookRelayOptions,
  type SendMessage,
} from "./library.ts";
