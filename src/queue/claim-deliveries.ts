/**
 * Claims due deliveries for one worker: a single short statement (in a transaction of its
 * own, with JIT off and its generic plan, in one round trip) that marks the rows in_flight
 * under a lease and returns everything needed to send them.
 * No transaction stays open while requests run.
 */
import pg from "pg";
import {
  GENERIC_PLAN,
  INDEX_PROBES,
  type LocalSettings,
  queryWithLocalSettings,
  WITHOUT_JIT,
} from "../db/local-settings.ts";
import { namedSql } from "../db/named-sql.ts";
import type { Queryable } from "../db/pool.ts";
import { NOW_SQL, type NowParam } from "../db/sql/clock.ts";
import { claimSet, heldBy } from "../db/sql/delivery-states.ts";
import { inFlightSql } from "../db/sql/in-flight.ts";
import type { OutboundDelivery } from "../delivery/transport.ts";
import { effectiveSql } from "../domain/endpoint-policy-derived.ts";
import {
  admitsClaimSql,
  claimRoomSql,
  probeStartedEventsSql,
  probeStartSet,
} from "../health/circuit-transitions.ts";
import { claimLimitSql } from "../health/concurrency-limit.ts";
import { PICK_SQL } from "./claim-pick.ts";
import { type ClaimBounds, ClaimWindow, inWindowSql } from "./claim-window.ts";

export interface ClaimOptions {
  workerId: string;
  /**
   * The claiming worker's liveness lock number (src/queue/worker-lock.ts): once its lock is
   * free the claim is handed back at once. Null: only the lease brings it back.
   */
  workerLock: number | null;
  /** One token per claim; results carrying another token are stale. */
  claimToken: string;
  limit: number;
  /** Per-endpoint in-flight limit for endpoints without their own. */
  defaultMaxInFlight: number;
  /**
   * Whether endpoints without their own adaptiveConcurrency adapt their in-flight limit
   * (health/concurrency-limit.ts). The worker passes HOOKRELAY_ADAPTIVE_CONCURRENCY's value;
   * absent: "off", maxInFlight alone (what a claim took before adaptive concurrency).
   */
  defaultAdaptiveConcurrency?: "on" | "off";
  defaultTimeoutMs: number;
  /** lease = endpoint timeout + leaseMarginMs */
  leaseMarginMs: number;
  /** the claim's "now" (db/sql/clock.ts); null or absent: the database's now() */
  now?: Date | null;
  /**
   * The claim's window of periods, kept from one claim to the next (claim-window.ts: the
   * worker's, made with its HOOKRELAY_PARTITION_INTERVAL). Absent: a window of a day's
   * periods for this claim alone (the floor read first).
   */
  window?: ClaimWindow;
  /**
   * The claiming worker's answered rows whose results are not written yet (its result
   * writer's), which the claim counts as free room; absent: none. See UnwrittenResults.
   */
  unwritten?: UnwrittenResults;
}

/**
 * A worker's rows answered with success (the receiver's 2xx, the broker's confirm) whose
 * results are not written yet, counted per endpoint (the first three arrays, of one length;
 * an endpoint has up to two entries, `inWrite` or not). Such a row still counts in flight in
 * the database (`claimed - released`) though nothing of it is outstanding at the receiver,
 * so the claim takes it off its endpoint's count, where its snapshot still has it in flight.
 * (A failure's is not counted: what it does to its endpoint, a pause, the circuit, a cut
 * limit, comes with its write, and a claim before that would send as if it had not happened.)
 *
 * - `claimTokens`: the claims those rows belong to, each once. If the lease row of any is
 *   gone from the claim's snapshot, nothing is counted: that claim was handed back (its
 *   lease ran out, its worker was judged gone), which released its rows already.
 * - The rows of the write under way (`inWrite`), one transaction, count only while its
 *   `witness` (any of its rows) is still in flight under its token in the snapshot: once
 *   that write has committed, every one of them is released already.
 *
 * docs/delivery.md, "Room freed by answers not yet written".
 */
export interface UnwrittenResults {
  endpointIds: string[];
  counts: number[];
  inWrite: boolean[];
  claimTokens: string[];
  witness: { deliveryId: number; messageMs: number; claimToken: string } | null;
}

const NO_UNWRITTEN: UnwrittenResults = {
  endpointIds: [],
  counts: [],
  inWrite: [],
  claimTokens: [],
  witness: null,
};

/**
 * A claimed row: what its transport reads (OutboundDelivery, delivery/transport.ts) and
 * what the recorder and the result write read besides.
 */
export interface ClaimedDelivery extends OutboundDelivery {
  appId: string;
  maxAttempts: number;
  trigger: string;
  retryBaseMs: number | null;
  retryCapMs: number | null;
  /** the single half-open probe of its endpoint's circuit */
  isProbe: boolean;
  /** attempts backpressure answers gave back to it (domain/backpressure.ts); absent: 0 */
  attemptsGivenBack?: number;
  /** an operational failing/exhausted event was sent about it (queue/operational-events.ts) */
  failureNotified: boolean;
  /** its row's partition key (deliveries.message_ms): the result write finds the row there */
  messageMs: number;
}

// One statement, in four steps:
//
// ready    Endpoints that may send now: enabled, not paused by a Retry-After, below their
//          in-flight limit (their adaptive limit within maxInFlight, which also resumes
//          them gradually after a pause: docs/adaptive-concurrency.md), circuit closed (or
//          open with its cooldown over, or half-open with its probe lost), and with at
//          least one due row. Their claim rows (endpoint_claim_state: rows claimed, token
//          buckets) are locked in id order, so the claimed count and the buckets read here
//          are exact across all workers; a row another claim holds is waited for, not
//          skipped (skipping made overlapping claims miss most endpoints), and read in its
//          newest version. The health row (the result write's: rows released, circuit,
//          pause, adaptive limit) is read as this statement's snapshot has it, without
//          waiting for a write that holds it (docs/delivery.md, "Claims and result writes
//          lock different rows"): a stale `released` counts a row in flight that is not any
//          more (less room, never more), and a stale circuit, pause or limit is what a claim
//          made just before that write would have read. The claiming worker's own rows
//          that were answered but whose results are not written yet do not count
//          (`answered`: UnwrittenResults): nothing of theirs is at the receiver.
// probing  The circuits that were not closed in the snapshot: their health rows locked,
//          in id order after the claim rows, and read in their newest version, so two
//          claims never both take a probe.
// budget   Per endpoint: free in-flight room, capped by the refilled token buckets; an
//          endpoint whose cooldown is over gets room for exactly one probe.
// picked   Endpoints in random order (under a backlog every endpoint gets its share of a
//          batch: a partner with 100k queued rows cannot push the others back), and per
//          endpoint its oldest due rows up to its budget that are unordered or their key's
//          head (PICK_SQL), skipping rows another transaction holds.
// claimed  The rows become in_flight with this claim's token, rewritten in place: no value
//          an index reads changes (migration 0007), so no index gets an entry. The lease
//          is one claims row for the whole claim, naming the worker's liveness lock; if
//          the worker's lock is free (it died: docs/worker-liveness.md) or the lease runs
//          out before it has written every result, the rows are handed back
//          (releaseLostClaims). The
//          claim rows take the new claimed count and the spent tokens; for a probe, the
//          health row the half_open state (recorded in circuit_events).
//
// The circuit's parts (which endpoints a claim admits, the probe) are its transitions in
// src/health/circuit-transitions.ts; the rows' own is claimSet (db/sql/delivery-states.ts).
//
// The claim commits without waiting for its WAL to reach the disk (synchronous_commit off
// for this transaction only). A claim lost in a database crash only puts its rows back as
// they were, due, to be sent again: at least once holds, as when a worker dies. Any later
// durable commit (the claim's result write, say) flushes it anyway. Not waiting shortens
// every claim by one flush, and with it the time the claim holds its health rows. So the
// claim must run as its own transaction (the worker sends it on the pool, where
// claimDeliveries runs it alone, with CLAIM_SETTINGS: db/local-settings.ts): inside a caller's
// transaction the setting would cover that transaction's commit too.
/**
 * The claim's check of its window (claim-window.ts; docs/history.md, "The claim's
 * periods"): whether a queued row lies outside [$loMs, $hiMs). The first entry of every
 * partition's due index outside the window (PostgreSQL leaves out the partitions inside it
 * when the plan starts), one descent each, never a scan of rows. In the claim's snapshot:
 * if one does, the claim takes nothing (its caller tries again with a wider window), so an
 * ordering key's earlier row is never out of sight. Whole periods: the check never filters
 * a period's rows by time, it asks whether the period has any.
 */
const BOUNDS_SQL = `
  select (select q.id from deliveries q
          where q.queued and (q.message_ms < $loMs::bigint or q.message_ms >= $hiMs::bigint)
          order by q.endpoint_id, q.next_attempt_at
          limit 1) is not null as outside`;

/** A lease runs for the endpoint's timeout plus the margin. */
const leaseFor = (timeoutMs: string) =>
  `${NOW_SQL} + (${timeoutMs} + $leaseMarginMs::int) * interval '1 millisecond'`;

/** The endpoint's in-flight limit: its adaptive limit within maxInFlight (concurrency-limit.ts). */
const CLAIM_LIMIT_SQL = claimLimitSql(
  "h",
  effectiveSql("e", "maxInFlight"),
  `${effectiveSql("e", "adaptiveConcurrency")} = 'on'`,
);

/**
 * The endpoint's rows in flight as the claim counts them: across all workers, less this
 * worker's answered rows whose results are not written yet (`answered`, UnwrittenResults).
 */
const IN_FLIGHT_SQL = `greatest(${inFlightSql("c", "h")} - coalesce(a.n, 0), 0)`;

type ClaimParams = Omit<ClaimOptions, "now" | "window" | "unwritten"> &
  NowParam &
  ClaimBounds & {
    unwrittenEndpoints: string[];
    unwrittenCounts: number[];
    unwrittenInWrite: boolean[];
    unwrittenTokens: string[];
    witnessId: number | null;
    witnessMs: number | null;
    witnessToken: string | null;
  };

const CLAIM_SQL = namedSql<ClaimParams>(
  `
with no_flush_wait as (
  select set_config('synchronous_commit', 'off', true)
),
bounds as materialized (
  ${BOUNDS_SQL}
),
answered as materialized (
  select a.endpoint_id, sum(a.n)::int as n
  from unnest($unwrittenEndpoints::text[], $unwrittenCounts::int[], $unwrittenInWrite::boolean[])
         as a(endpoint_id, n, in_write)
  -- (both checks are computed once for the statement, not per row)
  where (select count(*) from claims k where k.token = any ($unwrittenTokens::uuid[]))
          = cardinality($unwrittenTokens::uuid[])
    and (not a.in_write
         or exists (select from deliveries d
                    where d.id = $witnessId::bigint and d.message_ms = $witnessMs::bigint
                      and ${heldBy("d", "$witnessToken::uuid")}))
  group by a.endpoint_id
),
ready as (
  select c.endpoint_id, h.circuit_state, ${IN_FLIGHT_SQL} as in_flight,
         c.tokens_second, c.tokens_minute,
         c.tokens_hour, c.tokens_at, e.timeout_ms, ${effectiveSql("e", "maxInFlight")} as max_in_flight,
         ${CLAIM_LIMIT_SQL} as conc_limit,
         -- Svix's throttleRate is a per-second limit
         ${effectiveSql("e", "ratePerSecond")} as rate_per_second,
         e.rate_per_minute, e.rate_per_hour
  from endpoint_claim_state c
  join endpoint_health h on h.endpoint_id = c.endpoint_id
  join endpoints e on e.id = c.endpoint_id
  cross join bounds x
  left join answered a on a.endpoint_id = c.endpoint_id
  where not x.outside
    and not e.disabled
    and (h.paused_until is null or h.paused_until <= ${NOW_SQL})
    and ${IN_FLIGHT_SQL} < ${CLAIM_LIMIT_SQL}
    and ${admitsClaimSql("h")}
    -- (a row's probe, its first entry: written as a join, PostgreSQL may hash every queued row.
    -- Read from the latest due time down: the rows in flight are the oldest due, claimed
    -- oldest first and listed at the due time they were claimed at, so read from the oldest
    -- up this stepped over every one of them, hundreds under a backlog; from the latest the
    -- first entry is a row not in flight unless all due rows are)
    and (select d.id from deliveries d
         where d.endpoint_id = c.endpoint_id
           and d.queued and ${inWindowSql("d")}
           and d.next_attempt_at <= ${NOW_SQL}
           and d.status <> 'in_flight'
         order by d.next_attempt_at desc
         limit 1) is not null
  order by c.endpoint_id
  for update of c
),
-- The circuits that were not closed in this statement's snapshot: their health rows are
-- locked (in id order, after the claim rows: every claim takes them in that order, and
-- nothing that locks a health row waits for a claim row) and read in their newest version,
-- so two claims never both start a probe.
probing as (
  select h.endpoint_id, h.circuit_state
  from endpoint_health h
  where h.endpoint_id in (select r.endpoint_id from ready r where r.circuit_state <> 'closed')
    and ${admitsClaimSql("h")}
  order by h.endpoint_id
  for update
),
budget as (
  select r.*,
         -- each bucket refills continuously up to its capacity (= its limit: the burst)
         least(r.rate_per_second::float8,
               coalesce(r.tokens_second, r.rate_per_second)
                 + extract(epoch from ${NOW_SQL} - coalesce(r.tokens_at, ${NOW_SQL})) * r.rate_per_second) as ts,
         least(r.rate_per_minute::float8,
               coalesce(r.tokens_minute, r.rate_per_minute)
                 + extract(epoch from ${NOW_SQL} - coalesce(r.tokens_at, ${NOW_SQL})) * r.rate_per_minute / 60.0) as tm,
         least(r.rate_per_hour::float8,
               coalesce(r.tokens_hour, r.rate_per_hour)
                 + extract(epoch from ${NOW_SQL} - coalesce(r.tokens_at, ${NOW_SQL})) * r.rate_per_hour / 3600.0) as th
  from ready r
),
room as (
  select b.*, p.circuit_state as probed_state,
         -- a circuit not closed in the snapshot: its newest state (null: not admitted any more)
         case when b.circuit_state <> 'closed' and p.endpoint_id is null then 0
              else least(${claimRoomSql("coalesce(p.circuit_state, b.circuit_state)", "b.conc_limit - b.in_flight")},
                         floor(least(coalesce(b.ts, 1e9), coalesce(b.tm, 1e9), coalesce(b.th, 1e9))))
         end::int as room
  from budget b
  left join probing p on p.endpoint_id = b.endpoint_id
  order by random()
),
picked as (
  select d.id, d.endpoint_id, d.message_ms, ${effectiveSql("r", "timeoutMs")} as timeout_ms
  from room r
  cross join lateral (${PICK_SQL}) d
  where r.room > 0
  limit $limit::int
),
claimed as (
  update deliveries d
  set ${claimSet({
    token: "$claimToken::uuid",
    workerId: "$workerId::text",
    leaseExpiresAt: leaseFor("p.timeout_ms"),
  })}
  from picked p
  -- (message_ms: the row's partition, docs/history.md; in the window, which leaves out
  -- the other periods when the plan starts)
  where d.id = p.id and d.message_ms = p.message_ms and ${inWindowSql("d")}
  returning d.id, d.message_id, d.endpoint_id, d.app_id, d.attempt_count, d.max_attempts, d.trigger,
            d.failure_notified, d.attempts_given_back, d.message_ms
),
lease as (
  insert into claims (token, worker_id, worker_lock, delivery_ids, lease_expires_at)
  select $claimToken::uuid, $workerId::text, $workerLock::int, array_agg(p.id order by p.id),
         ${leaseFor("max(p.timeout_ms)")}
  from picked p
  cross join no_flush_wait
  having count(*) > 0
),
taken as (
  select p.endpoint_id, count(*)::int as n,
         min(p.id) as first_id, max(p.timeout_ms) as timeout_ms
  from picked p
  group by p.endpoint_id
),
counted as (
  update endpoint_claim_state c
  set claimed = c.claimed + t.n,
      tokens_second = r.ts - t.n,
      tokens_minute = r.tm - t.n,
      tokens_hour = r.th - t.n,
      tokens_at = ${NOW_SQL}
  from taken t
  join room r on r.endpoint_id = t.endpoint_id
  where c.endpoint_id = t.endpoint_id
),
-- A probe: the circuit, locked by \`probing\`, becomes half_open with the row as its probe.
health as (
  update endpoint_health h
  set ${probeStartSet({
    h: "h",
    before: "r.probed_state",
    probeId: "t.first_id",
    probeUntil: leaseFor("t.timeout_ms"),
  })}
  from taken t
  join room r on r.endpoint_id = t.endpoint_id
  where h.endpoint_id = t.endpoint_id and r.probed_state <> 'closed'
  returning h.endpoint_id, r.probed_state as before
),
probe_events as (
  ${probeStartedEventsSql("health", "endpoint_id", "before")}
),
-- Materialized: computed once, one row per endpoint. Inlined, the generic plan (whose
-- estimate for claimed is one row) read and sorted every endpoint's secrets again for each
-- claimed row, a third of the claim's time in scenario 3, all of it with the health rows
-- locked (docs/performance.md, "Scenario 3 with two workers").
signing as materialized (
  -- the secrets that sign right now: the current one and any still in a rotation's grace
  select s.endpoint_id, array_agg(s.secret order by s.id desc) as secrets
  from endpoint_secrets s
  where s.endpoint_id in (select endpoint_id from claimed)
    and (s.expires_at is null or s.expires_at > ${NOW_SQL})
  group by s.endpoint_id
)
-- One row at least: the check's verdict (outside: nothing taken, claim-window.ts), with
-- the claimed rows, or alone with nulls when none was claimed. What belongs to the endpoint
-- (its settings, its signing secrets) comes once per endpoint, on its lowest claimed row
-- (\`endpoint_first\`), and is null on the others: read and sent once instead of once per
-- row, and parsed by the worker once (docs/performance.md, "The claim's rows").
select k.*, b.outside
from bounds b
left join (
  -- "offset 0" keeps each lookup a per-row index probe: flattened into a join, the planner
  -- may hash-join the whole messages table to find a few hundred rows.
  select c.id, c.message_id, c.endpoint_id, c.app_id, c.attempt_count, c.max_attempts, c.trigger,
         c.failure_notified, c.attempts_given_back, c.message_ms, m.event_type, m.payload, m.event_id,
         m.traceparent,
         (t.first_id is not null) as endpoint_first,
         e.url, e.headers, e.timeout_ms,
         e.retry_base_ms, e.retry_cap_ms, e.propagate_trace,
         e.method, e.body_format, e.url_token, e.missing_fields, e.success_rule,
         e.destination_kind, e.destination_secret,
         e.egress_pool, e.proxy_url, e.proxy_secret, e.tls_client_cert, e.tls_client_key, e.tls_ca,
         e.oauth2, e.oauth2_secret,
         -- as JSON: the driver parses it natively (its text[] parser reads a character at a time)
         case when t.first_id is not null then to_json(coalesce(s.secrets, '{}'::text[])) end
           as secrets,
         (h.before is not null) as is_probe
  from claimed c
  cross join lateral (
    -- (message_ms: its partition, not every day's; docs/history.md)
    select event_type, payload, event_id, traceparent from messages
    where id = c.message_id and message_ms = c.message_ms offset 0
  ) m
  left join taken t on t.first_id = c.id
  left join lateral (
    select url, headers, ${effectiveSql("en", "timeoutMs")} as timeout_ms,
           retry_base_ms, retry_cap_ms, propagate_trace,
           method, body_format, url_token, missing_fields, success_rule,
           destination_kind, destination_secret,
           -- egress (docs/egress.md): the endpoint's pool, else its application's
           coalesce(en.egress_pool,
                    (select a.egress_pool from applications a where a.id = en.app_id)) as egress_pool,
           proxy_url, proxy_secret, tls_client_cert, tls_client_key, tls_ca,
           -- OAuth2 client credentials (docs/oauth2.md): the settings, the secret sealed
           oauth2, oauth2_secret
    from endpoints en where en.id = c.endpoint_id and t.first_id is not null offset 0
  ) e on true
  left join signing s on s.endpoint_id = c.endpoint_id and t.first_id is not null
  left join health h on h.endpoint_id = c.endpoint_id
) k on true
`,
  "hookrelay_claim_deliveries",
);

/**
 * The claim's settings for its own transaction (db/local-settings.ts). No JIT: the claim's
 * estimated cost grows with the endpoints that have due rows; past jit_above_cost a
 * PostgreSQL with JIT on would compile it on every run, for tens of ms more than the claim
 * itself takes (docs/delivery.md, "The claim and JIT"). Its generic plan from the first run
 * on each connection: planning the claim takes 5-15 ms, and PostgreSQL would otherwise plan
 * its first five runs on every connection one by one before settling on the generic plan
 * (docs/performance.md, scenario 3's history). Index probes only (INDEX_PROBES): that
 * generic plan is built once per connection from whatever statistics the tables have then,
 * and kept until one of them changes; built while deliveries looked empty (a worker started
 * before the backlog came, a period's partition before its first row) it hash-joined or
 * bitmap-scanned every queued row for each endpoint (docs/delivery.md, "The claim's plan").
 */
export const CLAIM_SETTINGS: LocalSettings = { ...WITHOUT_JIT, ...GENERIC_PLAN, ...INDEX_PROBES };

/**
 * Claims due deliveries. On a pool (the worker's way): in a transaction of its own on one
 * of its connections, with CLAIM_SETTINGS for that transaction, in one round trip. On a
 * client: the statement alone, in whatever transaction the client has (a test's, rolled
 * back).
 */
export async function claimDeliveries(db: Queryable, o: ClaimOptions): Promise<ClaimedDelivery[]> {
  const window = o.window ?? new ClaimWindow();
  const unwritten = o.unwritten ?? NO_UNWRITTEN;
  const run = async (bounds: ClaimBounds) => {
    const query = CLAIM_SQL.query({
      workerId: o.workerId,
      workerLock: o.workerLock,
      claimToken: o.claimToken,
      limit: o.limit,
      defaultMaxInFlight: o.defaultMaxInFlight,
      defaultAdaptiveConcurrency: o.defaultAdaptiveConcurrency ?? "off",
      defaultTimeoutMs: o.defaultTimeoutMs,
      leaseMarginMs: o.leaseMarginMs,
      now: o.now ?? null,
      unwrittenEndpoints: unwritten.endpointIds,
      unwrittenCounts: unwritten.counts,
      unwrittenInWrite: unwritten.inWrite,
      unwrittenTokens: unwritten.claimTokens,
      witnessId: unwritten.witness?.deliveryId ?? null,
      witnessMs: unwritten.witness?.messageMs ?? null,
      witnessToken: unwritten.witness?.claimToken ?? null,
      ...bounds,
    });
    const { rows } =
      db instanceof pg.Pool
        ? await queryWithLocalSettings(db, CLAIM_SETTINGS, query)
        : await db.query(query);
    return rows;
  };
  // a queued row outside the window: nothing was taken; the floor read again, then every
  // period (claim-window.ts): at most three runs (no row lies outside every period)
  let bounds = await window.bounds(db);
  let result = await run(bounds);
  for (let runs = 1; runs < 3 && result[0]?.outside === true; runs++) {
    bounds = await window.widen(db, bounds);
    result = await run(bounds);
  }
  const rows = result.filter((r) => r.id !== null);
  // each endpoint's settings ride on its first row alone (CLAIM_SQL's last step)
  const endpoints = new Map<string, ClaimedEndpointRow>();
  for (const r of rows) if (r.endpoint_first) endpoints.set(r.endpoint_id, r);
  return rows.map((r) => {
    const e = endpoints.get(r.endpoint_id);
    // (every endpoint's lowest claimed row is claimed: the statement updates every row it picked)
    if (e === undefined) throw new Error(`claim: no settings came for endpoint ${r.endpoint_id}`);
    return claimedDelivery(r, e);
  });
}

/** The endpoint's columns of a claimed row (null but on the endpoint's first row). */
// biome-ignore lint/suspicious/noExplicitAny: a driver row
type ClaimedEndpointRow = Record<string, any>;

// biome-ignore lint/suspicious/noExplicitAny: a driver row
function claimedDelivery(r: Record<string, any>, e: ClaimedEndpointRow): ClaimedDelivery {
  return {
    id: r.id,
    messageId: r.message_id,
    endpointId: r.endpoint_id,
    appId: r.app_id,
    attemptCount: r.attempt_count,
    maxAttempts: r.max_attempts,
    trigger: r.trigger,
    eventType: r.event_type,
    payload: r.payload,
    url: e.url,
    headers: e.headers,
    timeoutMs: e.timeout_ms,
    retryBaseMs: e.retry_base_ms,
    retryCapMs: e.retry_cap_ms,
    secrets: e.secrets,
    isProbe: r.is_probe,
    eventId: r.event_id,
    method: e.method,
    bodyFormat: e.body_format,
    urlToken: e.url_token,
    missingFields: e.missing_fields,
    successRule: e.success_rule,
    failureNotified: r.failure_notified,
    // (a bigint: the driver's text, a millisecond well within a number's exact range)
    messageMs: Number(r.message_ms),
    attemptsGivenBack: r.attempts_given_back,
    traceparent: r.traceparent,
    propagateTrace: e.propagate_trace === "on",
    destinationKind: e.destination_kind,
    destinationSecret: e.destination_secret,
    // (absent for an endpoint without egress settings: the sender's shared Agent)
    ...((e.egress_pool ?? e.proxy_url ?? e.tls_client_cert ?? e.tls_ca) !== null && {
      egress: {
        pool: e.egress_pool,
        proxyUrl: e.proxy_url,
        proxySecret: e.proxy_secret,
        tlsClientCert: e.tls_client_cert,
        tlsClientKey: e.tls_client_key,
        tlsCa: e.tls_ca,
      },
    }),
    // (a JSON null is no OAuth2 either: the column map writes null as one)
    ...(e.oauth2 !== null &&
      e.oauth2_secret !== null && { oauth2: { ...e.oauth2, clientSecret: e.oauth2_secret } }),
  };
}
