/**
 * Safety net for the per-endpoint in-flight counters (endpoint_health.in_flight): claims
 * add to them and results subtract in the same transactions that move the rows, so they
 * should never drift; this maintenance task recounts anyway and repairs any difference.
 */
import { type Pool, withTransaction } from "../db/pool.ts";

export async function reconcileInFlight(pool: Pool): Promise<number> {
  return withTransaction(pool, async (client) => {
    // Rows being claimed or written right now are skipped; they get their turn next time.
    const locked = await client.query(
      "select endpoint_id, in_flight from endpoint_health order by endpoint_id for update skip locked",
    );
    if (locked.rows.length === 0) return 0;
    // A new statement, so a new snapshot: it sees every claim committed before our locks,
    // and no claim or result can touch these endpoints until we commit.
    const { rowCount } = await client.query(
      `update endpoint_health h set in_flight = coalesce(c.n, 0)
       from unnest($1::text[]) as l(endpoint_id)
       left join (
         select endpoint_id, count(*)::int as n from deliveries
         where queued and status = 'in_flight' and endpoint_id = any ($1::text[])
         group by endpoint_id
       ) c on c.endpoint_id = l.endpoint_id
       where h.endpoint_id = l.endpoint_id and h.in_flight <> coalesce(c.n, 0)`,
      [locked.rows.map((r) => r.endpoint_id)],
    );
    return rowCount ?? 0;
  });
}
