/**
 * Hands claimed deliveries back without an attempt (shutdown before they were sent, or
 * aborted at the drain deadline): due again at once, attempt budget untouched.
 */
import { type Pool, withTransaction } from "../db/pool.ts";

export interface Claim {
  deliveryId: number;
  claimToken: string;
}

export async function releaseDeliveries(pool: Pool, claims: Claim[]): Promise<number> {
  if (claims.length === 0) return 0;
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `update deliveries d
       set status = case when d.attempt_count = 0 then 'pending' else 'failed' end,
           next_attempt_at = now(),
           lease_expires_at = null,
           claim_token = null,
           claimed_by = null,
           updated_at = now()
       from unnest($1::bigint[], $2::uuid[]) as r(id, token)
       where d.id = r.id and d.claim_token = r.token and d.status = 'in_flight'
       returning d.id, d.endpoint_id`,
      [claims.map((c) => c.deliveryId), claims.map((c) => c.claimToken)],
    );
    const perEndpoint = new Map<string, number>();
    for (const r of rows) perEndpoint.set(r.endpoint_id, (perEndpoint.get(r.endpoint_id) ?? 0) + 1);
    const ids = [...perEndpoint.keys()].sort();
    // Free the in-flight slots; rows locked in id order like every other health writer.
    await client.query(
      `update endpoint_health h
       set in_flight = greatest(h.in_flight - r.n, 0),
           -- a released probe never ran: let the next claim probe again
           probe_until = case when h.probe_delivery_id = any ($3::bigint[]) then now() else h.probe_until end
       from (select * from unnest($1::text[], $2::integer[]) as r(endpoint_id, n)) r
       where h.endpoint_id = r.endpoint_id
         and h.endpoint_id in (select endpoint_id from endpoint_health where endpoint_id = any ($1::text[])
                               order by endpoint_id for update)`,
      [ids, ids.map((id) => perEndpoint.get(id)), rows.map((r) => r.id)],
    );
    return rows.length;
  });
}
