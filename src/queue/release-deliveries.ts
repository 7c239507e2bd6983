/**
 * Hands claimed deliveries back without an attempt (shutdown before they were sent, or
 * aborted at the drain deadline): due again at once, attempt budget untouched.
 */
import type { Queryable } from "../db/pool.ts";

export interface Claim {
  deliveryId: number;
  claimToken: string;
}

export async function releaseDeliveries(db: Queryable, claims: Claim[]): Promise<number> {
  if (claims.length === 0) return 0;
  const { rowCount } = await db.query(
    `update deliveries d
     set status = case when d.attempt_count = 0 then 'pending' else 'failed' end,
         next_attempt_at = now(),
         lease_expires_at = null,
         claim_token = null,
         claimed_by = null,
         updated_at = now()
     from unnest($1::bigint[], $2::uuid[]) as r(id, token)
     where d.id = r.id and d.claim_token = r.token and d.status = 'in_flight'`,
    [claims.map((c) => c.deliveryId), claims.map((c) => c.claimToken)],
  );
  return rowCount ?? 0;
}
