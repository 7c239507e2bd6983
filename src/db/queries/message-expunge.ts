/**
 * Removes a message's content and keeps its record (routes/message-content.ts; docs/delivery.md,
 * "Expunged messages"), in the caller's transaction:
 *
 * - messages.payload becomes EXPUNGED_PAYLOAD and expunged_at is set (the first time);
 * - its deliveries that wait (pending, failed awaiting a retry) are canceled with error kind
 *   `expunged`: nothing more is sent. One in flight finishes; should it fail, its retry is
 *   refused by the sender, never sent (a dead letter of kind `expunged`);
 * - attempts to URL-template endpoints keep the template instead of the URL rendered from
 *   the payload's values;
 * - an idempotency-key's stored answer to the message's create no longer holds the payload
 *   (the key still replays the same message id).
 */
import { EXPUNGED_PAYLOAD, EXPUNGED_PAYLOAD_SHOWN } from "../../domain/expunged-payload.ts";
import type { Queryable } from "../pool.ts";
import { messageMsOf } from "../sql/message-ms.ts";

/** The error text a delivery canceled by an expunge carries. */
export const EXPUNGED_ERROR = "the message's payload was expunged: nothing more is sent";

/** Expunges message `id` of app `appId`; false when there is no such message. */
export async function expungeMessage(db: Queryable, appId: string, id: string): Promise<boolean> {
  const { rows } = await db.query<{ id: string }>(
    `update messages set payload = $3::text, expunged_at = coalesce(expunged_at, now())
     where id = $1::text and app_id = $2::text and ${messageMsOf("", "$1::text")} returning id`,
    [id, appId, EXPUNGED_PAYLOAD],
  );
  if (rows.length === 0) return false;
  await db.query(
    `update deliveries set status = 'canceled', updated_at = now(),
            last_error_kind = 'expunged', last_error = $2::text
     where message_id = $1::text and ${messageMsOf("", "$1::text")}
       and status in ('pending', 'failed')`,
    [id, EXPUNGED_ERROR],
  );
  // (attempts_message_idx finds them; only template URLs carry payload values)
  await db.query(
    `update attempts a set url = e.url from endpoints e
     where a.message_id = $1::text and e.id = a.endpoint_id
       and strpos(e.url, '{') > 0 and a.url <> e.url`,
    [id],
  );
  // A create's answer starts with the message id (routes/messages.ts, messageOut); the
  // table holds a day of answers at most (HOOKRELAY_IDEMPOTENCY_TTL_MS).
  const stored = await db.query<{ principal: string; key: string; response_body: string }>(
    `select principal, key, response_body from idempotency_keys
     where starts_with(response_body, $1::text) for update`,
    [`{"id":${JSON.stringify(id)},`],
  );
  for (const row of stored.rows) {
    let answer: Record<string, unknown>;
    try {
      answer = JSON.parse(row.response_body);
    } catch {
      continue;
    }
    if (!("payload" in answer)) continue;
    answer.payload = JSON.parse(EXPUNGED_PAYLOAD_SHOWN);
    await db.query(
      "update idempotency_keys set response_body = $3::text where principal = $1::text and key = $2::text",
      [row.principal, row.key, JSON.stringify(answer)],
    );
  }
  return true;
}
