/**
 * The SQL that raises operational events on the hot path (docs/operational-webhooks.md): a
 * part of the result write (queue/record-results.ts). The events, who raises each and the
 * rule that picks an attempt's are domain/operational-events.ts.
 */

import { messageMsOf } from "../db/sql/message-ms.ts";
import { effectiveSql } from "../domain/endpoint-policy-derived.ts";
import { OperationalEvent } from "../domain/operational-events.ts";
import { PUBLIC_ID_PREFIX } from "../ids-public.ts";
import { SKIPPED_KIND, SKIPPED_TEXT } from "./enqueue-message.ts";

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
  join messages m on m.id = r.message_id and ${messageMsOf("m", "r.message_id")}
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
  insert into messages (id, app_id, event_type, payload, message_ms)
  select e.id, $opAppId::text, e.event_type, e.payload, hookrelay_message_ms(e.id)
  from (select * from op_attempt_events union all select * from op_gone_events) e
  where exists (select 1 from applications where id = $opAppId::text)
  returning id, event_type, message_ms
),
-- A disabled operator endpoint gets its rows too, as enqueue-message.ts writes them: held
-- (pending) unless the endpoint itself says skip. (The operator application's endpoints
-- hold by default whatever HOOKRELAY_WHILE_DISABLED says: docs/delivery.md, "While an
-- endpoint is disabled".)
op_fanout as (
  insert into deliveries (message_id, endpoint_id, app_id, max_attempts, status,
                          last_error_kind, last_error, message_ms)
  select m.id, e.id, e.app_id, ${effectiveSql("e", "maxAttempts", "$opMaxAttempts")},
         case when s.skip then 'canceled' else 'pending' end,
         case when s.skip then '${SKIPPED_KIND}' end,
         case when s.skip then '${SKIPPED_TEXT}' end,
         m.message_ms
  from op_messages m
  join endpoints e on e.app_id = $opAppId::text
  cross join lateral (select e.disabled and e.while_disabled = 'skip' as skip) s
  where e.event_types is null or m.event_type = any (e.event_types)
  returning status
),
op_woken as (
  select pg_notify('${workChannel}', '') from op_fanout where status = 'pending' limit 1
)`;
