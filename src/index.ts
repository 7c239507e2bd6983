/**
 * `hookrelay`: the library. Send messages from your own application, inside your own
 * transaction, and sign or check webhooks. It loads no HTTP server, no embedded database
 * and no CLI, and sets nothing process-wide; the server is `hookrelay/server`.
 */
export { ed25519PublicKey, generateEd25519Secret } from "./delivery/ed25519-keys.ts";
export { generateSecret, type SigningKey, secretKey, signatureHeader } from "./delivery/sign.ts";
export { signingKeyOf } from "./delivery/signing-key.ts";
export {
  ConfigError,
  DatabaseError,
  ERROR_CODES,
  type ErrorCode,
  HookRelayError,
} from "./errors.ts";
export {
  type EnqueueResult,
  HookRelay,
  type HookRelayOptions,
  type SendMessage,
} from "./library.ts";
