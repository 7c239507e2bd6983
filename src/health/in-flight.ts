/**
 * Safety net for the per-endpoint in-flight counts (claimed - released, inFlightSql below):
 * claims add to `claimed` and results and hand-backs to `released` in the same
 * transactions that move the rows, so the difference should never drift; this maintenance
 * task recounts anyway and repairs any difference (in `claimed`).
 */
import { type Pool, withTransaction } from "../db/pool.ts";

export async function reconcileInFlight(pool: Pool): Promise<number> {
  return withTransaction(pool, async (client) => {
    // Rows being claimed or written right now are skipped; they get their turn next time.
    // Claim rows first, then health rows, each in id order: the claim's order.
    const locked = await client.query(
      `with c as (
         select endpoint_id from endpoint_claim_state order by endpoint_id for update skip locked
       )
       select h.endpoint_id from endpoint_health h
       where h.endpoint_id in (select endpoint_id from c)
       order by h.endpoint_id
       for update skip locked`,
    );
    if (locked.rows.length === 0) return 0;
    // A new statement, so a new snapshot: it sees every claim and result committed before
    // our locks, and no claim or result can touch these endpoints until we commit.
    const { rowCount } = await client.query(
      `update endpoint_claim_state c set claimed = h.released + coalesce(n.n, 0)
       from unnest($1::text[]) as l(endpoint_id)
       join endpoint_health h on h.endpoint_id = l.endpoint_id
       left join (
         select endpoint_id, count(*)::int as n from deliveries
         where queued and status = 'in_flight' and endpoint_id = any ($1::text[])
         group by endpoint_id
       ) n on n.endpoint_id = l.endpoint_id
       where c.endpoint_id = l.endpoint_id and c.claimed <> h.released + coalesce(n.n, 0)`,
      [locked.rows.map((r) => r.endpoint_id)],
    );
    return rowCount ?? 0;
  });
}
