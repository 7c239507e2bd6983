/**
 * Hands claimed deliveries back without an attempt, due again at once with their attempt
 * budget untouched, their endpoints' in-flight slots freed and a probe among them released:
 *
 * - releaseDeliveries: a worker's own rows (shutdown before they were sent, or aborted at
 *   the drain deadline);
 * - releaseLostClaims: the unfinished rows of claims whose worker is gone (its liveness
 *   lock is free: docs/worker-liveness.md; or its heartbeat row is stale: docs/database.md)
 *   or whose lease ran out (a worker alive but stuck,
 *   or cut off from the database). Every worker runs it once per poll interval.
 *
 * A row is only handed back while it still carries the claim's token and is in flight, so
 * a row whose result was written meanwhile, or that another claim took, is left alone.
 */
import { namedSql } from "../db/named-sql.ts";
import { type Pool, type PoolClient, type Queryable, withTransaction } from "../db/pool.ts";
import { NOW_SQL } from "../db/sql/clock.ts";
import { handBackSet, heldBy } from "../db/sql/delivery-states.ts";
import { WORK_CHANNEL } from "../db/work-channel.ts";
import { probeReleasedSet } from "../health/circuit-transitions.ts";
import { WORKER_LOCK_CLASS } from "./worker-lock.ts";

export interface Claim {
  deliveryId: number | string;
  claimToken: string;
}

/**
 * Releases a worker's own claimed rows; their claims rows go with them. `now`: the
 * statements' clock (db/sql/clock.ts), null for the database's.
 */
export async function releaseDeliveries(
  pool: Pool,
  claims: Claim[],
  now: Date | null = null,
): Promise<number> {
  if (claims.length === 0) return 0;
  return withTransaction(pool, async (client) => {
    await client.query("delete from claims where token = any ($1::uuid[])", [
      [...new Set(claims.map((c) => c.claimToken))],
    ]);
    return handBack(client, claims, now);
  });
}

export interface LostClaimsOptions {
  /** most claims handed back by one call. Default 100. */
  limit?: number;
  /**
   * Also hand back the claims of workers whose liveness lock is free. False while the
   * caller's own lock is new (src/worker/liveness.ts): after a database restart every
   * worker gets a moment to take its lock again before the others judge it gone.
   */
  checkOwners: boolean;
  /**
   * A heartbeat row older than this makes its worker gone (docs/database.md). Every
   * process of a deployment should use the same value (HOOKRELAY_HEARTBEAT_STALE_MS).
   * Default 10_000.
   */
  heartbeatStaleMs?: number;
  /** the check's "now" (db/sql/clock.ts): leases and heartbeats are old against it */
  now?: Date | null;
}

// One statement (a round trip per poll interval, whatever the number of claims):
//
// owners   The workers that own claims (none while checkOwners is false).
// beating  Those of them that prove they are alive by a heartbeat row (a worker behind a
//          transaction pooler without a direct URL: docs/database.md); the others hold an
//          advisory lock (docs/worker-liveness.md). Both kinds may share a database.
// stale    The beating owners whose row is older than the threshold, locked (skip locked:
//          a row its worker is writing right now is beating; one another checker holds is
//          that checker's), so two workers checking at once do not both take the same
//          claims, and a worker that beats again meanwhile waits for this hand-back.
// freed    The other owners whose lock this statement can take: their liveness
//          connection has ended. One try per worker, not per row; a try that succeeds
//          holds the lock until this statement's transaction ends (an xact lock), so two
//          workers checking at once do not both take the same claims, and a live worker's
//          lock is never taken at all (the try fails at once). Materialized, so the tries
//          run exactly once.
// lost     Those workers' claims and every claim whose lease ran out, deleted; a claim
//          another worker is handing back right now, or whose last result is being
//          written, is skipped (it has them).
// back     Their rows still in flight under the claim's token go back (handBackSet).
// slots    The endpoints' in-flight slots are freed and a probe among the rows released
//          (probeReleasedSet), the health rows locked in id order like every other writer.
// wake     One NOTIFY at commit when anything came back: idle workers claim it at once.
const LOST_CLAIMS_SQL = namedSql<{
  now: Date | null;
  limit: number;
  checkOwners: boolean;
  lockClass: number;
  staleMs: number;
}>(
  `
with owners as materialized (
  select distinct worker_lock from claims
  where worker_lock is not null and $checkOwners::boolean
),
beating as materialized (
  select worker_lock from worker_heartbeats where worker_lock in (select worker_lock from owners)
),
stale as materialized (
  select worker_lock from worker_heartbeats
  where worker_lock in (select worker_lock from beating)
    and beat_at < ${NOW_SQL} - $staleMs::integer * interval '1 millisecond'
  for update skip locked
),
freed as materialized (
  select o.worker_lock
  from owners o
  where o.worker_lock not in (select worker_lock from beating)
    and pg_try_advisory_xact_lock($lockClass::int, o.worker_lock)
),
dead as (
  select worker_lock from stale union all select worker_lock from freed
),
lost as (
  delete from claims
  where token in (select token from claims
                  where lease_expires_at <= ${NOW_SQL} or worker_lock in (select worker_lock from dead)
                  order by lease_expires_at
                  limit $limit::int
                  for update skip locked)
  returning token, delivery_ids
),
rows as (
  select unnest(l.delivery_ids) as id, l.token from lost l
),
back as (
  update deliveries d
  set ${handBackSet("d")}
  from rows r
  where d.id = r.id and ${heldBy("d", "r.token")}
  returning d.id, d.endpoint_id
),
per as (
  select endpoint_id, count(*)::int as n, array_agg(id) as ids from back group by endpoint_id
),
slots as (
  update endpoint_health h
  set released = h.released + p.n,
      ${probeReleasedSet("h", "p.ids")}
  from per p
  where h.endpoint_id = p.endpoint_id
    and h.endpoint_id in (select endpoint_id from endpoint_health
                          where endpoint_id in (select endpoint_id from per)
                          order by endpoint_id for update)
),
wake as (
  select pg_notify('${WORK_CHANNEL}', '') from back limit 1
)
select (select count(*)::int from back) as released, (select count(*)::int from wake) as woke
`,
  "hookrelay_release_lost_claims",
);

/**
 * Hands back the rows of claims whose worker is gone or whose lease ran out; returns how
 * many rows. One statement, its own transaction: run it on a pool, not inside a caller's
 * transaction (the owners' locks it takes are held until that transaction ends).
 */
export async function releaseLostClaims(
  db: Queryable,
  options: LostClaimsOptions,
): Promise<number> {
  const { rows } = await db.query(
    LOST_CLAIMS_SQL.query({
      limit: options.limit ?? 100,
      checkOwners: options.checkOwners,
      lockClass: WORKER_LOCK_CLASS,
      staleMs: options.heartbeatStaleMs ?? 10_000,
      now: options.now ?? null,
    }),
  );
  return rows[0].released;
}

const HAND_BACK_SQL = namedSql<{ ids: (number | string)[]; tokens: string[]; now: Date | null }>(`
update deliveries d
set ${handBackSet("d")}
from unnest($ids::bigint[], $tokens::uuid[]) as r(id, token)
where d.id = r.id and ${heldBy("d", "r.token")}
returning d.id, d.endpoint_id`);

// Frees the in-flight slots; rows locked in id order like every other health writer.
const FREE_SLOTS_SQL = namedSql<{
  endpointIds: string[];
  counts: number[];
  rowIds: number[];
  now: Date | null;
}>(`
update endpoint_health h
set released = h.released + r.n,
    ${probeReleasedSet("h", "$rowIds::bigint[]")}
from (select * from unnest($endpointIds::text[], $counts::integer[]) as r(endpoint_id, n)) r
where h.endpoint_id = r.endpoint_id
  and h.endpoint_id in (select endpoint_id from endpoint_health where endpoint_id = any ($endpointIds::text[])
                        order by endpoint_id for update)`);

async function handBack(client: PoolClient, claims: Claim[], now: Date | null): Promise<number> {
  const { rows } = await client.query(
    HAND_BACK_SQL.query({
      ids: claims.map((c) => c.deliveryId),
      tokens: claims.map((c) => c.claimToken),
      now,
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
      now,
    }),
  );
  return rows.length;
}
