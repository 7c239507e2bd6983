/** hookrelay's public API. */
export { buildApi } from "./api/server.ts";
export { type Config, type ConfigOverrides, loadConfig } from "./config.ts";
export { migrate } from "./db/migrate.ts";
export { generateSecret, secretKey, signatureHeader } from "./delivery/sign.ts";
export { ApiError, HookRelayError } from "./errors.ts";
export { HookRelay, type HookRelayOptions, type SendMessage } from "./library.ts";
export { type Runtime, startRuntime } from "./runtime.ts";
export { makeWorker, type Worker } from "./worker/worker.ts";
