/**
 * Hands claimed deliveries back without an attempt, due again at once with their attempt
 * budget untouched:
 *
 * - releaseDeliveries: a worker's own rows (shutdown before they were sent, or aborted at
 *   the drain deadline);
 * - releaseExpiredClaims: the unfinished rows of claims whose lease ran out, i.e. whose
 *   worker died or lost the database. Every worker runs it now and then.
 *
 * A row is only handed back while it still carries the claim's token and is in flight, so
 * a row whose result was written meanwhile, or that another claim took, is left alone.
 */
import { namedSql } from "../db/named-sql.ts";
import { type Pool, type PoolClient, withTransaction } from "../db/pool.ts";
import { probeReleasedSet } from "../health/circuit-transitions.ts";
import { handBackSet, heldBy } from "./delivery-states.ts";

export interface Claim {
  deliveryId: number | string;
  claimToken: string;
}

/** Releases a worker's own claimed rows; their claims rows go with them. */
export async function releaseDeliveries(pool: Pool, claims: Claim[]): Promise<number> {
  if (claims.length === 0) return 0;
  return withTransaction(pool, async (client) => {
    await client.query("delete from claims where token = any ($1::uuid[])", [
      [...new Set(claims.map((c) => c.claimToken))],
    ]);
    return handBack(client, claims);
  });
}

/**
 * Hands back the rows of claims whose lease ran out; returns how many rows. Claims another
 * worker is handing back right now are skipped (it has them).
 */
export async function releaseExpiredClaims(pool: Pool, limit = 100): Promise<number> {
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `delete from claims
       where token in (select token from claims where lease_expires_at <= now()
                       order by lease_expires_at limit $1 for update skip locked)
       returning token, delivery_ids`,
      [limit],
    );
    if (rows.length === 0) return 0;
    const claims = rows.flatMap((r) =>
      (r.delivery_ids as string[]).map((id) => ({ deliveryId: id, claimToken: r.token as string })),
    );
    return handBack(client, claims);
  });
}

const HAND_BACK_SQL = namedSql<{ ids: (number | string)[]; tokens: string[] }>(`
update deliveries d
set ${handBackSet("d")}
from unnest($ids::bigint[], $tokens::uuid[]) as r(id, token)
where d.id = r.id and ${heldBy("d", "r.token")}
returning d.id, d.endpoint_id`);

// Frees the in-flight slots; rows locked in id order like every other health writer.
const FREE_SLOTS_SQL = namedSql<{ endpointIds: string[]; counts: number[]; rowIds: number[] }>(`
update endpoint_health h
set in_flight = greatest(h.in_flight - r.n, 0),
    ${probeReleasedSet("h", "$rowIds::bigint[]")}
from (select * from unnest($endpointIds::text[], $counts::integer[]) as r(endpoint_id, n)) r
where h.endpoint_id = r.endpoint_id
  and h.endpoint_id in (select endpoint_id from endpoint_health where endpoint_id = any ($endpointIds::text[])
                        order by endpoint_id for update)`);

async function handBack(client: PoolClient, claims: Claim[]): Promise<number> {
  const { rows } = await client.query(
    HAND_BACK_SQL.query({
      ids: claims.map((c) => c.deliveryId),
      tokens: claims.map((c) => c.claimToken),
    }),
  );
  if (rows.length === 0) return 0;
  const perEndpoint = new Map<string, number>();
  for (const r of rows) perEndpoint.set(r.endpoint_id, (perEndpoint.get(r.endpoint_id) ?? 0) + 1);
  const ids = [...perEndpoint.keys()].sort();
  await client.query(
    FREE_SLOTS_SQL.query({
      endpointIds: ids,
      counts: ids.map((id) => perEndpoint.get(id) ?? 0),
      rowIds: rows.map((r) => r.id),
    }),
  );
  return rows.length;
}
