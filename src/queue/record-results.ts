/**
 * Writes a batch of attempt outcomes back in one statement (one round trip, its own
 * transaction):
 *
 * 1. it inserts every attempt row and latency sample (the requests happened) and moves
 *    each delivery to its next state, but only if it still carries the claim token of the
 *    worker reporting it: a worker whose lease lapsed and was taken over cannot overwrite
 *    the newer outcome. Claims whose last result this is end here too (their claims rows
 *    are deleted);
 * 2. it locks the endpoints' health rows (in id order) and applies the per-endpoint
 *    outcome (in-flight slots of the results that applied, added to `released`, failure counts, circuit
 *    transitions, Retry-After pauses);
 * 3. it disables the endpoints that answered 410 Gone;
 * 4. it writes the operational events the results raise (operational-events.ts) as
 *    messages of the operator application, with their deliveries.
 *
 * Texts that came from the receiver (error, response body, URL) go through storableText
 * (db/storable-text.ts): one NUL would fail the whole statement.
 *
 * The health rows are locked after the deliveries, attempts, latency samples and claims rows
 * are written (`written` makes PostgreSQL run the inserts and the delete first), and the
 * statement commits at once: another worker's write waits for those rows (and a claim
 * taking a probe of a circuit that is not closed), so they are held for the health step and
 * the commit alone, never across a round trip to the worker. A claim of a closed circuit
 * does not wait for them: it locks the endpoint's claim row (endpoint_claim_state) and
 * reads the health row's released count as committed (docs/delivery.md, "Claims and result
 * writes lock different rows").
 */
import pg from "pg";
import type { HealthConfig } from "../config.ts";
import { plainArray, textArray, timestampArray } from "../db/array-literal.ts";
import { GENERIC_PLAN, queryWithLocalSettings } from "../db/local-settings.ts";
import { namedSql } from "../db/named-sql.ts";
import type { Queryable } from "../db/pool.ts";
import { NOW_SQL, type NowParam } from "../db/sql/clock.ts";
import { attemptSet, heldBy } from "../db/sql/delivery-states.ts";
import { storableText } from "../db/storable-text.ts";
import { WORK_CHANNEL } from "../db/work-channel.ts";
import { summarizeOutcomes } from "../domain/circuit-summary.ts";
import type { DeliveryStatus } from "../domain/delivery-states.ts";
import { fieldOf, type IntegerField } from "../domain/endpoint-policy.ts";
import type { OperationalEvent, OperationalTarget } from "../domain/operational-events.ts";
import { ErrorKind } from "../domain/retry-policy.ts";
import {
  type CircuitSettings,
  circuitSettings,
  outcomeTransitionsSql,
} from "../health/circuit-transitions.ts";
import { ID_PREFIX, newId } from "../ids.ts";
import { failureNotifiedSet, operationalEventsSql } from "./operational-events.ts";

export interface DeliveryResult {
  deliveryId: number;
  /**
   * the delivery row's partition key (deliveries.message_ms, as the claim returned it): the
   * write updates the row in its partition alone, not by id in every period's
   */
  messageMs: number;
  claimToken: string;
  messageId: string;
  endpointId: string;
  appId: string;
  trigger: string;
  url: string;
  /** 1-based number of this attempt */
  attemptNumber: number;
  /** delivered | failed | dead_letter */
  nextStatus: DeliveryStatus;
  /** for failed: the retry delay from now */
  retryDelayMs: number;
  startedAt: Date;
  latencyMs: number;
  /**
   * of latencyMs, how long the worker's own event loop was late meanwhile (worker/
   * loop-lateness.ts): the adaptive limit does not count it as the receiver's
   * (docs/adaptive-concurrency.md); absent: 0
   */
  workerLateMs?: number;
  success: boolean;
  statusCode: number | null;
  errorKind: string | null;
  error: string | null;
  responseBody: string | null;
  /**
   * the transport's own detail as JSON text, for transports whose detail is not an HTTP
   * status (attempts.detail; docs/destinations.md); null or absent for HTTP
   */
  detail?: string | null;
  /** this attempt was its endpoint's half-open probe */
  isProbe: boolean;
  /** pause the whole endpoint this long (429/503 Retry-After, clamped to the cap) */
  pauseMs: number | null;
  /** a backpressure answer (domain/backpressure.ts): not counted by the circuit breaker */
  backpressure?: boolean;
  /** 1 when this backpressure answer gives its attempt back, else 0 */
  givenBack?: number;
  /** the last result of its claim: the claim's lease row goes with this write */
  finishesClaim?: boolean;
  /** nothing reached the endpoint (a missing template field, an expunged payload, a failed egress proxy): no latency sample, no circuit count */
  notSent?: boolean;
  /** the operational event this result raises (operational-events.ts attemptEvent) */
  operationalEvent?: OperationalEvent | null;
}

/** Every array is a PostgreSQL array literal (src/db/array-literal.ts), one element per row. */
interface RecordParams extends CircuitSettings, NowParam {
  // one element per result
  ids: string;
  messageMs: string;
  /** the lowest and highest of messageMs: the periods the write may touch (below) */
  minMessageMs: number;
  maxMessageMs: number;
  tokens: string;
  statuses: string;
  delaysMs: string;
  attemptNumbers: string;
  startedAts: string;
  latenciesMs: string;
  workerLatesMs: string;
  statusCodes: string;
  errorKinds: string;
  errors: string;
  responseBodies: string;
  outcomes: string;
  messageIds: string;
  endpointIds: string;
  appIds: string;
  triggers: string;
  urls: string;
  isProbes: string;
  givenBacks: string;
  details: string;
  /** the claims whose last result is in this batch */
  finishedClaims: string;
  // one element per endpoint (summarizeOutcomes, in endpoint id order)
  outcomeEndpointIds: string;
  anyOks: string;
  trailingFailures: string;
  lastOkAts: string;
  lastFailAts: string;
  pausesMs: string;
  okCounts: string;
  /** endpoints that answered 410 Gone, the id of their endpoint.disabled event, the 410's time */
  goneEndpointIds: string;
  goneMsgIds: string;
  goneAts: string;
  // operational webhooks (operational-events.ts): per result its event and that event's id
  opEvents: string;
  opMsgIds: string;
  /** the operator application; null: operational webhooks are off */
  opAppId: string | null;
  opMaxAttempts: number;
  // the adaptive in-flight limit's process defaults (health/concurrency-limit.ts)
  defaultMaxInFlight: number;
  defaultAdaptiveConcurrency: string;
}

const RECORD_SQL = namedSql<RecordParams>(
  `
with r as (
  select *
  from unnest(
    $ids::bigint[], $tokens::uuid[], $statuses::text[], $delaysMs::integer[],
    $attemptNumbers::integer[], $startedAts::timestamptz[], $latenciesMs::integer[],
    $statusCodes::integer[], $errorKinds::text[], $errors::text[], $responseBodies::text[],
    $outcomes::text[], $messageIds::text[], $endpointIds::text[], $appIds::text[],
    $triggers::text[], $urls::text[], $isProbes::boolean[], $opEvents::text[], $opMsgIds::text[],
    $givenBacks::smallint[], $details::text[], $messageMs::bigint[], $workerLatesMs::integer[]
  ) with ordinality as r(id, token, status, delay_ms, attempt_number, started_at,
         latency_ms, status_code, error_kind, error, response_body, outcome,
         message_id, endpoint_id, app_id, trigger, url, is_probe, op_event, op_msg_id,
         given_back, detail, message_ms, worker_late_ms, n)
),
updated as (
  update deliveries d
  set ${attemptSet("d", "r")},
      ${failureNotifiedSet("d", "r")}
  from r
  -- (message_ms: the row's partition; PostgreSQL prunes the others row by row. The batch's
  -- bounds, plain parameters, let the generic plan leave out the periods outside them when
  -- it starts, instead of opening a scan of each of a month's periods on every run)
  where d.id = r.id and d.message_ms = r.message_ms and ${heldBy("d", "r.token")}
    and d.message_ms >= $minMessageMs::bigint and d.message_ms <= $maxMessageMs::bigint
  returning d.id, d.endpoint_id
),
samples as (
  insert into latency_samples (endpoint_id, at, latency_ms, ok)
  select r.endpoint_id, r.started_at, r.latency_ms, r.outcome = 'success' from r
  -- no request, no latency (a payload without a field the endpoint's URL template needs,
  -- an expunged message's, an egress proxy that failed: docs/egress.md; no OAuth2 token:
  -- docs/oauth2.md)
  where r.error_kind is null
     or r.error_kind not in ('${ErrorKind.missingField}', '${ErrorKind.expunged}',
                             '${ErrorKind.proxy}', '${ErrorKind.oauth}')
  returning 1
),
inserted as (
  insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                        url, started_at, latency_ms, outcome, status_code, error_kind, error,
                        response_body, detail)
  select r.id, r.message_id, r.endpoint_id, r.app_id, r.attempt_number, r.trigger,
         r.url, r.started_at, r.latency_ms, r.outcome, r.status_code, r.error_kind, r.error,
         r.response_body, r.detail::jsonb
  from r
  returning id, delivery_id, attempt_number
),
finished as (
  delete from claims where token = any ($finishedClaims::uuid[])
  returning 1
),
-- Everything of the batch that needs no health row is written before the health rows are
-- locked: \`i\` reads this count, so PostgreSQL runs these inserts and the claims' delete
-- to completion first. Left unread, they would run at the end of the statement, with the
-- health rows held (a claim of every worker waits for those rows: docs/performance.md,
-- "Scenario 3 with two workers").
written as (
  select (select count(*) from samples) + (select count(*) from inserted)
         + (select count(*) from finished) as n
),
-- Per endpoint: the slots its applied results release, and its probe's result if that
-- applied (a stale result is neither: its row was handed back and claimed again). A probe
-- answered with backpressure is no result: the circuit stays half-open and probes again
-- once the pause is over (docs/delivery.md, Backpressure).
released as (
  select endpoint_id, count(*)::int as n from updated group by endpoint_id
),
probe as (
  select distinct on (r.endpoint_id) r.endpoint_id, r.id, r.outcome = 'success' as ok
  from r
  where r.is_probe and r.id in (select id from updated)
    and r.error_kind is distinct from '${ErrorKind.rateLimited}'
    -- nor is one the egress proxy failed: the endpoint was never reached (docs/egress.md)
    and r.error_kind is distinct from '${ErrorKind.proxy}'
  order by r.endpoint_id, r.started_at desc, r.n desc
),
i as (
  select o.endpoint_id, coalesce(rl.n, 0) as applied, o.any_ok, o.trailing_failures,
         o.last_ok_at, o.last_fail_at, p.id as probe_id, p.ok as probe_ok, o.pause_ms, o.ok_count
  from unnest($outcomeEndpointIds::text[], $anyOks::boolean[], $trailingFailures::integer[],
              $lastOkAts::timestamptz[], $lastFailAts::timestamptz[], $pausesMs::integer[],
              $okCounts::integer[])
    as o(endpoint_id, any_ok, trailing_failures, last_ok_at, last_fail_at, pause_ms, ok_count)
  left join released rl on rl.endpoint_id = o.endpoint_id
  left join probe p on p.endpoint_id = o.endpoint_id
  -- (always true: it makes \`written\` run before the health rows are locked)
  where (select n from written) >= 0
),
${outcomeTransitionsSql},
-- 410 Gone disables the endpoint, in the same transaction as the dead letter it caused
-- (rows locked in id order: two writers disabling overlapping sets cannot deadlock).
gone as (
  update endpoints e
  set disabled = true, disabled_reason = 'gone', updated_at = ${NOW_SQL}
  from unnest($goneEndpointIds::text[], $goneMsgIds::text[], $goneAts::timestamptz[])
    as g(id, op_msg_id, fail_since)
  where e.id = g.id and e.id in (
    select id from endpoints
    where id = any ($goneEndpointIds::text[]) and not disabled
    order by id
    for no key update
  )
  returning e.id, e.app_id, e.uid, g.op_msg_id, g.fail_since
),
${operationalEventsSql(WORK_CHANNEL)}
select (select count(*)::int from updated) as changed, (select count(*)::int from op_woken) as woken
`,
  "hookrelay_record_results",
);

/** Records the results; returns how many deliveries changed state (stale ones did not). */
export async function recordResults(
  db: Queryable,
  results: DeliveryResult[],
  health: HealthConfig,
  operational: OperationalTarget | null = null,
  /** the write's "now" (db/sql/clock.ts): retry due times, circuit cooldowns, pauses */
  now: Date | null = null,
  /**
   * maxInFlight of endpoints without their own (HOOKRELAY_ENDPOINT_MAX_IN_FLIGHT): the
   * adaptive limit grows up to it. Left out: the field's upper bound (the claim still
   * applies the endpoint's maxInFlight).
   */
  defaultMaxInFlight: number = (fieldOf("maxInFlight") as IntegerField).max,
): Promise<number> {
  if (results.length === 0) return 0;
  const gone = new Map<string, Date>();
  for (const r of results) {
    if (r.errorKind !== ErrorKind.gone) continue;
    const at = gone.get(r.endpointId);
    if (!at || r.startedAt < at) gone.set(r.endpointId, r.startedAt);
  }
  const eventId = (raised: boolean) => (operational && raised ? newId(ID_PREFIX.message) : null);
  const col = <T>(f: (r: DeliveryResult) => T) => results.map(f);
  const outcomes = summarizeOutcomes(results);
  let minMessageMs = Number.POSITIVE_INFINITY;
  let maxMessageMs = Number.NEGATIVE_INFINITY;
  for (const r of results) {
    minMessageMs = Math.min(minMessageMs, r.messageMs);
    maxMessageMs = Math.max(maxMessageMs, r.messageMs);
  }
  const per = <T>(f: (o: (typeof outcomes)[number]) => T) => outcomes.map(f);
  const query = RECORD_SQL.query({
    ids: plainArray(col((r) => r.deliveryId)),
    messageMs: plainArray(col((r) => r.messageMs)),
    minMessageMs,
    maxMessageMs,
    tokens: textArray(col((r) => r.claimToken)),
    statuses: textArray(col((r) => r.nextStatus)),
    delaysMs: plainArray(col((r) => Math.round(r.retryDelayMs))),
    attemptNumbers: plainArray(col((r) => r.attemptNumber)),
    startedAts: timestampArray(col((r) => r.startedAt)),
    latenciesMs: plainArray(col((r) => r.latencyMs)),
    workerLatesMs: plainArray(col((r) => Math.round(r.workerLateMs ?? 0))),
    statusCodes: plainArray(col((r) => r.statusCode)),
    errorKinds: textArray(col((r) => r.errorKind)),
    errors: textArray(col((r) => storableText(r.error))),
    responseBodies: textArray(col((r) => storableText(r.responseBody))),
    outcomes: textArray(col((r) => (r.success ? "success" : "failure"))),
    messageIds: textArray(col((r) => r.messageId)),
    endpointIds: textArray(col((r) => r.endpointId)),
    appIds: textArray(col((r) => r.appId)),
    triggers: textArray(col((r) => r.trigger)),
    urls: textArray(col((r) => storableText(r.url))),
    isProbes: plainArray(col((r) => r.isProbe)),
    givenBacks: plainArray(col((r) => r.givenBack ?? 0)),
    details: textArray(col((r) => r.detail ?? null)),
    finishedClaims: textArray(results.filter((r) => r.finishesClaim).map((r) => r.claimToken)),
    outcomeEndpointIds: textArray(per((o) => o.endpointId)),
    anyOks: plainArray(per((o) => o.anyOk)),
    trailingFailures: plainArray(per((o) => o.trailingFailures)),
    lastOkAts: timestampArray(per((o) => o.lastOkAt)),
    lastFailAts: timestampArray(per((o) => o.lastFailAt)),
    pausesMs: plainArray(per((o) => (o.pauseMs === null ? null : Math.round(o.pauseMs)))),
    okCounts: plainArray(per((o) => o.okCount)),
    ...circuitSettings(health),
    defaultMaxInFlight,
    defaultAdaptiveConcurrency: health.adaptiveConcurrency,
    goneEndpointIds: textArray([...gone.keys()]),
    goneMsgIds: textArray([...gone.keys()].map(() => eventId(true))),
    goneAts: timestampArray([...gone.values()]),
    opEvents: textArray(col((r) => (operational ? (r.operationalEvent ?? null) : null))),
    opMsgIds: textArray(col((r) => eventId(Boolean(r.operationalEvent)))),
    opAppId: operational?.appId ?? null,
    opMaxAttempts: operational?.defaultMaxAttempts ?? 1,
    now,
  });
  // On a pool (the worker's way): the statement's generic plan from its first run on each
  // connection (db/local-settings.ts). Its many steps take tens of ms to plan, and
  // PostgreSQL would plan its first five runs on every connection one by one before using
  // the generic plan it settles on anyway (docs/performance.md, scenario 3's history).
  const { rows } =
    db instanceof pg.Pool
      ? await queryWithLocalSettings(db, GENERIC_PLAN, query)
      : await db.query(query);
  return rows[0].changed;
}
