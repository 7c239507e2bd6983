/**
 * `hookrelay/server`: the service's parts, for embedding it in your own process: the
 * configuration, migrations, the API (Fastify), a worker, and `startRuntime`, which wires
 * them as `hookrelay start` does (with the logger and redactor of `makeProcessLogging`).
 */
export { type Config, type ConfigOverrides, loadConfig } from "./config.ts";
export { migrate } from "./db/migrate.ts";
export { ApiError } from "./errors.ts";
// the API with its dashboard and portal, as `hookrelay start` serves it
export { buildHttpApp as buildApi } from "./http-app.ts";
export {
  makeProcessLogging,
  type ProcessLogging,
  type Roles,
  type Runtime,
  startRuntime,
} from "./runtime.ts";
export { makeWorker, type Worker } from "./worker/worker.ts";
