/**
 * Writes a batch of attempt outcomes back, in one short transaction:
 *
 * 1. one statement inserts every attempt row and latency sample (the requests happened)
 *    and moves each delivery to its next state, but only if it still carries the claim
 *    token of the worker reporting it: a worker whose lease lapsed and was taken over
 *    cannot overwrite the newer outcome. Claims whose last result this is end here too
 *    (their claims rows are deleted);
 * 2. one statement locks the endpoints' health rows (in id order) and applies the
 *    per-endpoint outcome (in-flight slots, failure counts, circuit transitions,
 *    Retry-After pauses);
 * 3. endpoints that answered 410 Gone are disabled.
 *
 * The health rows are locked last, so they are held only for step 2 (and 3) and the
 * commit: a claim needs them, and waits for them.
 */
import type { HealthConfig } from "../config.ts";
import { type Pool, withTransaction } from "../db/pool.ts";
import { applyOutcomes, summarizeOutcomes } from "../health/circuit-breaker.ts";
import { ErrorKind } from "../delivery/retry-policy.ts";
import type { DeliveryStatus } from "./delivery-states.ts";
import { disableGoneEndpoints } from "./disable-gone-endpoints.ts";

export interface DeliveryResult {
  deliveryId: number;
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
  success: boolean;
  statusCode: number | null;
  errorKind: string | null;
  error: string | null;
  responseBody: string | null;
  /** this attempt was its endpoint's half-open probe */
  isProbe: boolean;
  /** pause the whole endpoint this long (429/503 Retry-After, clamped to the cap) */
  pauseMs: number | null;
  /** the last result of its claim: the claim's lease row goes with this write */
  finishesClaim?: boolean;
}

const RECORD_SQL = `
with r as (
  select *
  from unnest(
    $1::bigint[], $2::uuid[], $3::text[], $4::integer[], $5::integer[], $6::timestamptz[],
    $7::integer[], $8::integer[], $9::text[], $10::text[], $11::text[], $12::text[],
    $13::text[], $14::text[], $15::text[], $16::text[], $17::text[]
  ) as r(id, token, status, delay_ms, attempt_number, started_at,
         latency_ms, status_code, error_kind, error, response_body, outcome,
         message_id, endpoint_id, app_id, trigger, url)
),
updated as (
  update deliveries d
  set status = r.status,
      attempt_count = d.attempt_count + 1,
      next_attempt_at = case when r.status = 'failed'
                             then now() + r.delay_ms * interval '1 millisecond'
                             else d.next_attempt_at end,
      delivered_at = case when r.status = 'delivered' then now() else d.delivered_at end,
      lease_expires_at = null,
      claim_token = null,
      claimed_by = null,
      last_attempt_at = r.started_at,
      last_error_kind = r.error_kind,
      last_error = r.error,
      last_status_code = r.status_code,
      last_response_ms = r.latency_ms,
      updated_at = now()
  from r
  where d.id = r.id and d.claim_token = r.token and d.status = 'in_flight'
  returning d.id
),
samples as (
  insert into latency_samples (endpoint_id, at, latency_ms, ok)
  select r.endpoint_id, r.started_at, r.latency_ms, r.outcome = 'success' from r
),
inserted as (
  insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                        url, started_at, latency_ms, outcome, status_code, error_kind, error,
                        response_body)
  select r.id, r.message_id, r.endpoint_id, r.app_id, r.attempt_number, r.trigger,
         r.url, r.started_at, r.latency_ms, r.outcome, r.status_code, r.error_kind, r.error,
         r.response_body
  from r
  returning 1
),
finished as (
  delete from claims where token = any ($18::uuid[])
)
select u.id from updated u
`;

/** Records the results; returns how many deliveries changed state (stale ones did not). */
export async function recordResults(
  pool: Pool,
  results: DeliveryResult[],
  health: HealthConfig,
): Promise<number> {
  if (results.length === 0) return 0;
  const col = <T>(f: (r: DeliveryResult) => T) => results.map(f);
  return withTransaction(pool, async (client) => {
    const { rows } = await client.query({
      name: "hookrelay_record_results",
      text: RECORD_SQL,
      values: [
        col((r) => r.deliveryId),
        col((r) => r.claimToken),
        col((r) => r.nextStatus),
        col((r) => Math.round(r.retryDelayMs)),
        col((r) => r.attemptNumber),
        col((r) => r.startedAt),
        col((r) => r.latencyMs),
        col((r) => r.statusCode),
        col((r) => r.errorKind),
        col((r) => r.error),
        col((r) => r.responseBody),
        col((r) => (r.success ? "success" : "failure")),
        col((r) => r.messageId),
        col((r) => r.endpointId),
        col((r) => r.appId),
        col((r) => r.trigger),
        col((r) => r.url),
        results.filter((r) => r.finishesClaim).map((r) => r.claimToken),
      ],
    });
    const applied = new Set<number>(rows.map((r) => r.id));
    const outcomes = summarizeOutcomes(
      results.map((r) => ({
        deliveryId: r.deliveryId,
        endpointId: r.endpointId,
        success: r.success,
        startedAt: r.startedAt,
        isProbe: r.isProbe,
        applied: applied.has(r.deliveryId),
        pauseMs: r.pauseMs,
      })),
    );
    await applyOutcomes(client, outcomes, health);
    // 410 Gone disables the endpoint, in the same transaction as the dead letter it caused.
    const gone = [...new Set(results.filter((r) => r.errorKind === ErrorKind.gone).map((r) => r.endpointId))];
    await disableGoneEndpoints(client, gone);
    return applied.size;
  });
}
