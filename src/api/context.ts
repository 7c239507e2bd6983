/**
 * What the route files are given: parts built once per process by whoever runs the API
 * (runtime.ts), never built by the routes themselves. Its own module, so route files
 * need not import server.ts, which imports them.
 */
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import type { OperationalTarget } from "../domain/operational-events.ts";
import type { Tracing } from "../ops/tracing.ts";
import type { EnqueueBatcher } from "../queue/enqueue-batcher.ts";
import type { Redactor } from "../security/redact.ts";
import type { SecretBox } from "../security/secret-box.ts";
import type { SsrfGuard } from "../security/ssrf-guard.ts";

export interface ApiContext {
  pool: Pool;
  config: Config;
  /** checks endpoint URLs when they are saved */
  ssrfGuard: SsrfGuard;
  /** seals signing secrets at rest and opens them for GET .../secret */
  secretBox: SecretBox;
  /** masks sensitive values in URLs and texts of listings */
  redactor: Redactor;
  /** writes accepted messages, many per transaction; started and stopped by its owner */
  batcher: EnqueueBatcher;
  /** where endpoint events go (docs/operational-webhooks.md); null or absent: off */
  operational?: OperationalTarget | null;
  /**
   * ingest spans and the producer's traceparent (docs/telemetry.md); absent: tracing off,
   * a malformed traceparent still counted in the metrics (buildApi's default)
   */
  tracing?: Tracing;
}
