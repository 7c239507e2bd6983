/**
 * Operational webhooks (docs/operational-webhooks.md): Svix-shaped events about deliveries
 * and endpoints, sent to the operator as messages of the operator application, so they go
 * through the same queue, retries and signing as every other message. Each event is written
 * in the transaction of the change it reports, so none is lost and none is invented.
 *
 *   event                      raised when                                    by
 *   message.attempt.failing    attempt 4 of a delivery failed and it will be   the result write
 *                              retried (Svix: "on the fourth failure")
 *   message.attempt.exhausted  a delivery became a dead letter after an        the result write
 *                              attempt (attempts used up, or a permanent failure)
 *   message.attempt.recovered  a delivery succeeded after a failing or         the result write
 *                              exhausted event was sent about it
 *   endpoint.disabled          410 Gone (trigger automatic), or the API         the result write,
 *                              (trigger manual)                                 the API
 *   endpoint.enabled | created | updated | deleted   through the API           the API
 *
 * Deliveries and endpoints of the operator application raise no events: the events'
 * own deliveries never report on themselves.
 */
import { effectiveSql } from "../domain/endpoint-policy-derived.ts";
import { PUBLIC_ID_PREFIX } from "../ids-public.ts";

export const OperationalEvent = {
  attemptExhausted: "message.attempt.exhausted",
  attemptFailing: "message.attempt.failing",
  attemptRecovered: "message.attempt.recovered",
  endpointCreated: "endpoint.created",
  endpointUpdated: "endpoint.updated",
  endpointDeleted: "endpoint.deleted",
  endpointDisabled: "endpoint.disabled",
  endpointEnabled: "endpoint.enabled",
} as const;
export type OperationalEvent = (typeof OperationalEvent)[keyof typeof OperationalEvent];

export const OPERATIONAL_EVENT_TYPES: readonly OperationalEvent[] = Object.values(OperationalEvent);

/** The failed attempt that raises message.attempt.failing (Svix sends it on the fourth). */
export const FAILING_ATTEMPT = 4;

/** Where operational events go: the operator application, built once per process. */
export interface OperationalTarget {
  /** the operator application's id; its deliveries raise no events */
  appId: string;
  /** attempts of an event's delivery when its endpoint sets none */
  defaultMaxAttempts: number;
}

/** The event one attempt's result raises, if any. */
export function attemptEvent(result: {
  attemptNumber: number;
  nextStatus: string;
  success: boolean;
  /** a failing or exhausted event was sent about this delivery, and no recovered one since */
  failureNotified: boolean;
}): OperationalEvent | null {
  if (result.success) return result.failureNotified ? OperationalEvent.attemptRecovered : null;
  if (result.nextStatus === "dead_letter") return OperationalEvent.attemptExhausted;
  if (result.nextStatus === "failed" && result.attemptNumber === FAILING_ATTEMPT)
    return OperationalEvent.attemptFailing;
  return null;
}

/**
 * The deliveries' failure_notified after the result write (a SET item; `r.op_event` is the
 * event the result raised, null for none).
 */
export const failureNotifiedSet = (d: string, r: string) =>
  `failure_notified = case ${r}.op_event
      when '${OperationalEvent.attemptRecovered}' then false
      when '${OperationalEvent.attemptFailing}' then true
      when '${OperationalEvent.attemptExhausted}' then true
      else ${d}.failure_notified end`;

/** An ISO 8601 UTC timestamp as Svix writes them, from a timestamptz expression. */
export const isoUtcSql = (t: string) =>
  `to_char(${t} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The CTEs of the result write that raise the events (record-results.ts): they read its
 * `r` (the results, with op_event and op_msg_id), `updated` (the results that applied),
 * `inserted` (the attempt rows) and `gone` (endpoints disabled by 410, with the message id
 * of their event in `op_msg_id`), write the events as messages of $opAppId with one
 * delivery per subscribed endpoint of it, and wake the workers (`op_woken`, to be read by
 * the final select so the notification is evaluated).
 */
export const operationalEventsSql = (workChannel: string) => `
op_attempt_events as (
  select distinct on (r.n) r.op_msg_id as id, r.op_event as event_type,
         json_build_object(
           'type', r.op_event,
           'data', json_build_object(
             'appId', r.app_id, 'appUid', a.uid, 'endpointId', r.endpoint_id,
             'msgId', r.message_id, 'msgEventId', m.event_id,
             'lastAttempt', json_build_object(
               -- the attempt id as the API shows it (docs/public-ids.md)
               'id', hookrelay_public_id('${PUBLIC_ID_PREFIX.attempt}', ins.id),
               'responseStatusCode', coalesce(r.status_code, 0),
               'timestamp', ${isoUtcSql("r.started_at")})))::text as payload
  from r
  join updated u on u.id = r.id
  join applications a on a.id = r.app_id
  join messages m on m.id = r.message_id
  join inserted ins on ins.delivery_id = r.id and ins.attempt_number = r.attempt_number
  where r.op_event is not null and $opAppId::text is not null and r.app_id <> $opAppId::text
  order by r.n, ins.id desc
),
op_gone_events as (
  select g.op_msg_id as id, '${OperationalEvent.endpointDisabled}' as event_type,
         json_build_object(
           'type', '${OperationalEvent.endpointDisabled}',
           'data', json_build_object(
             'appId', g.app_id, 'appUid', a.uid, 'endpointId', g.id, 'endpointUid', g.uid,
             'failSince', ${isoUtcSql("g.fail_since")}, 'trigger', 'automatic'))::text as payload
  from gone g
  join applications a on a.id = g.app_id
  where $opAppId::text is not null and g.app_id <> $opAppId::text and g.op_msg_id is not null
),
-- (an operator application deleted by hand takes no events: a foreign-key error here would
-- fail the whole result write, again on every retry)
op_messages as (
  insert into messages (id, app_id, event_type, payload)
  select e.id, $opAppId::text, e.event_type, e.payload
  from (select * from op_attempt_events union all select * from op_gone_events) e
  where exists (select 1 from applications where id = $opAppId::text)
  returning id, event_type
),
op_fanout as (
  insert into deliveries (message_id, endpoint_id, app_id, max_attempts)
  select m.id, e.id, e.app_id, ${effectiveSql("e", "maxAttempts", "$opMaxAttempts")}
  from op_messages m
  join endpoints e on e.app_id = $opAppId::text
  where not e.disabled and (e.event_types is null or m.event_type = any (e.event_types))
  returning 1
),
op_woken as (
  select pg_notify('${workChannel}', '') from op_fanout limit 1
)`;
