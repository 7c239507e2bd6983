/**
 * Logs the endpoints' adaptive in-flight limits as a run left them, lowest, highest and the
 * reasons of their last move (docs/adaptive-concurrency.md): what held a worker's window.
 */
import type { Pool } from "../../src/db/pool.ts";
import type { BenchContext } from "./context.ts";

export async function logEndpointLimits(ctx: BenchContext, pool: Pool): Promise<void> {
  const { rows } = await pool.query(
    `select min(concurrency_limit)::float8 as lo, max(concurrency_limit)::float8 as hi,
            string_agg(distinct concurrency_reason, ', ') as why
     from endpoint_health`,
  );
  const l = rows[0];
  ctx.log(
    l.lo === null
      ? "  endpoints' in-flight limits: none (adaptive limit off)"
      : `  endpoints' in-flight limits at the end: ${Math.round(l.lo)}-${Math.round(l.hi)} (${l.why})`,
  );
}
