/**
 * Rows seeded straight into the database for the operations tests (health summary, dead
 * letters, requeue, cancel, alerts): apps and endpoints through the API, then messages and
 * deliveries with chosen statuses, timestamps, status codes and error kinds in one
 * statement, and latency samples, so that every figure a test reads has an exact expected
 * value.
 */
import { expect } from "vitest";
import type { Pool } from "../../src/db/pool.ts";
import { ID_PREFIX, newId } from "../../src/ids.ts";
import { publicIdsOf } from "../../src/ids-public-key.ts";
import type { Harness } from "./harness.ts";

export const V1 = "/api/v1";
/** Port 9 (discard) on loopback: nothing listens, a stray attempt fails at once. */
export const DEAD_URL = "http://127.0.0.1:9";
export const MIN = 60_000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;

export const ago = (ms: number) => new Date(Date.now() - ms);
let seq = 0;
export const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

export async function newApp(h: Harness, uid?: string): Promise<string> {
  const res = await h.call("POST", `${V1}/app`, { name: unique("app"), ...(uid && { uid }) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id;
}

export async function newEndpoint(h: Harness, appId: string, body: Record<string, unknown> = {}) {
  const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: `${DEAD_URL}/${unique("ep")}`,
    ...body,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.id as string, url: res.body.url as string, appId };
}

export type Status = "pending" | "failed" | "in_flight" | "delivered" | "dead_letter" | "canceled";

export interface SeedRow {
  endpointId: string;
  status: Status;
  /** default: now */
  createdAt?: Date;
  /** when it reached its status (for dead letters: when it died); default createdAt */
  updatedAt?: Date;
  code?: number | null;
  kind?: string | null;
  error?: string | null;
  attempts?: number;
  /** default: createdAt (in_flight: an hour ahead, the lease) */
  nextAttemptAt?: Date;
  payload?: string;
}

export interface Seeded extends SeedRow {
  deliveryId: number;
  messageId: string;
}

/**
 * One message and one delivery per row, exactly as described, in one statement. As rows of
 * before the periods (message_ms 0, the legacy partition), or with `inPeriods` in the
 * period of their message id's time (now), as the API writes them (docs/history.md).
 */
export async function seed(
  pool: Pool,
  rows: SeedRow[],
  options: { inPeriods?: boolean } = {},
): Promise<Seeded[]> {
  const now = Date.now();
  const full = rows.map((r) => {
    const createdAt = r.createdAt ?? new Date(now);
    return {
      ...r,
      messageId: newId(ID_PREFIX.message),
      createdAt,
      updatedAt: r.updatedAt ?? createdAt,
      nextAttemptAt:
        r.nextAttemptAt ?? (r.status === "in_flight" ? new Date(now + HOUR) : createdAt),
    };
  });
  const { rows: out } = await pool.query(
    `with i as (
       select * from unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::timestamptz[],
                            $6::int[], $7::text[], $8::text[], $9::int[], $10::timestamptz[], $11::text[])
         with ordinality
         as i(message_id, endpoint_id, status, created_at, updated_at, code, kind, err, attempts, next_at, payload, n)
     ),
     m as (
       insert into messages (id, app_id, event_type, payload, created_at, message_ms)
       select i.message_id, e.app_id, 'seeded.event', i.payload, i.created_at,
              case when $12::boolean then hookrelay_message_ms(i.message_id) else 0 end
       from i join endpoints e on e.id = i.endpoint_id
     )
     insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                             next_attempt_at, lease_expires_at, claim_token, last_status_code,
                             last_error_kind, last_error, last_attempt_at, delivered_at, created_at, updated_at,
                             message_ms)
     select i.message_id, i.endpoint_id, e.app_id, i.status, i.attempts, 5, i.next_at,
            case when i.status = 'in_flight' then i.next_at end,
            case when i.status = 'in_flight' then gen_random_uuid() end,
            i.code, i.kind, i.err,
            case when i.attempts > 0 then i.updated_at end,
            case when i.status = 'delivered' then i.updated_at end,
            i.created_at, i.updated_at,
            case when $12::boolean then hookrelay_message_ms(i.message_id) else 0 end
     from i join endpoints e on e.id = i.endpoint_id
     order by i.n
     returning id, message_id`,
    [
      full.map((r) => r.messageId),
      full.map((r) => r.endpointId),
      full.map((r) => r.status),
      full.map((r) => r.createdAt),
      full.map((r) => r.updatedAt),
      full.map((r) => r.code ?? null),
      full.map((r) => r.kind ?? null),
      full.map((r) => r.error ?? null),
      full.map((r) => r.attempts ?? (r.status === "pending" ? 0 : 1)),
      full.map((r) => r.nextAttemptAt),
      full.map((r) => r.payload ?? "{}"),
      options.inPeriods === true,
    ],
  );
  const ids = new Map(out.map((r) => [r.message_id as string, Number(r.id)]));
  return full.map((r) => ({ ...r, deliveryId: ids.get(r.messageId)! }));
}

/** A dead letter as a receiver answer leaves it: status code, error kind and text. */
export function died(
  endpointId: string,
  at: Date,
  answer: number | "timeout" | "connection",
  attempts = 5,
): SeedRow {
  if (answer === "timeout") {
    return {
      endpointId,
      status: "dead_letter",
      createdAt: new Date(at.getTime() - HOUR),
      updatedAt: at,
      kind: "timeout",
      error: "timed out after 15000 ms",
      attempts,
    };
  }
  if (answer === "connection") {
    return {
      endpointId,
      status: "dead_letter",
      createdAt: new Date(at.getTime() - HOUR),
      updatedAt: at,
      kind: "connection",
      error: "connect ECONNREFUSED",
      attempts,
    };
  }
  const kind = answer === 401 || answer === 403 ? "credentials" : "http";
  return {
    endpointId,
    status: "dead_letter",
    createdAt: new Date(at.getTime() - HOUR),
    updatedAt: at,
    code: answer,
    kind,
    error: `HTTP ${answer}`,
    attempts,
  };
}

export async function insertSamples(
  pool: Pool,
  endpointId: string,
  samples: { at: Date; ms: number; ok: boolean }[],
) {
  await pool.query(
    `insert into latency_samples (endpoint_id, at, latency_ms, ok)
     select $1::text, at, ms, ok from unnest($2::timestamptz[], $3::int[], $4::bool[]) as s(at, ms, ok)`,
    [endpointId, samples.map((s) => s.at), samples.map((s) => s.ms), samples.map((s) => s.ok)],
  );
}

/** Delivery ids as the API shows them on `pool`'s installation (docs/public-ids.md). */
export async function shownDeliveryIds(pool: Pool): Promise<(id: number) => string> {
  const ids = await publicIdsOf(pool);
  return (id) => ids.format("delivery", id);
}

/** Cancels every row a worker could claim, so a worker started later sees only a test's own rows. */
export async function parkEverything(pool: Pool) {
  await pool.query(
    "update deliveries set status = 'canceled' where status in ('pending', 'failed', 'in_flight')",
  );
}
