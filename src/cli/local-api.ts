/**
 * The CLI's way into hookrelay: the real API, built in-process and driven with inject(), on
 * the database the configuration names (DATABASE_URL, or the embedded cluster, reusing it
 * if `npm start` is running). Every command therefore has exactly the API's validation,
 * scoping and output shapes: one implementation, two interfaces.
 */
import { buildApi } from "../api/server.ts";
import { type Config, loadConfig } from "../config.ts";
import { migrate } from "../db/migrate.ts";
import type { Pool } from "../db/pool.ts";
import { ApiError } from "../errors.ts";
import { makeLogger } from "../logger.ts";
import { openDatabase } from "../runtime.ts";
import { makeRedactor } from "../security/redact.ts";

export interface LocalApi {
  config: Config;
  pool: Pool;
  /** a JSON request; throws ApiError for a 4xx/5xx answer */
  call<T = unknown>(
    method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
    url: string,
    body?: unknown,
  ): Promise<T>;
}

export async function withLocalApi<T>(fn: (api: LocalApi) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const logger = makeLogger(
    config.logLevel === "info" ? "warn" : config.logLevel,
    makeRedactor(config.sensitiveFields),
  );
  const { pool, embedded } = await openDatabase(config, logger);
  try {
    await migrate(pool);
    const app = await buildApi({
      pool,
      config,
      logger,
      authenticate: async () => ({ role: "admin", keyId: "cli" }),
      docs: false,
    });
    try {
      return await fn({
        config,
        pool,
        async call(method, url, body) {
          const res = await app.inject({
            method,
            url,
            ...(body !== undefined && {
              payload: JSON.stringify(body),
              headers: { "content-type": "application/json" },
            }),
          });
          const parsed = res.body ? JSON.parse(res.body) : null;
          if (res.statusCode >= 400) {
            throw new ApiError(res.statusCode, parsed?.code ?? "error", parsed?.detail ?? res.body);
          }
          return parsed;
        },
      });
    } finally {
      await app.close();
    }
  } finally {
    await pool.end();
    await embedded?.stop();
  }
}
