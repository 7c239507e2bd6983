/** Stored responses to POSTs with an `idempotency-key` (api/idempotency.ts). */
import type { Queryable } from "../pool.ts";

export interface IdempotencyKey {
  /** the API key's id: one client's keys never meet another's */
  principal: string;
  key: string;
}

export interface StoredResponse {
  request_hash: string;
  /** null while the first request is still being handled */
  status_code: number | null;
  response_body: string | null;
}

/** How long a first request that never finished (its process died) holds its key. */
const ABANDONED_AFTER = "60 seconds";

/**
 * Takes the key for a request: true when it was free, had expired (older than `ttlMs`),
 * or was held by a first request that never finished.
 */
export async function takeIdempotencyKey(
  db: Queryable,
  id: IdempotencyKey,
  requestHash: string,
  ttlMs: number,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `insert into idempotency_keys (principal, key, request_hash)
     values ($1::text, $2::text, $3::text)
     on conflict (principal, key) do update
       set request_hash = excluded.request_hash, status_code = null, response_body = null,
           created_at = now()
       where idempotency_keys.created_at < now() - $4::integer * interval '1 millisecond'
          or (idempotency_keys.status_code is null
              and idempotency_keys.created_at < now() - interval '${ABANDONED_AFTER}')
     returning 1`,
    [id.principal, id.key, requestHash, ttlMs],
  );
  return rowCount === 1;
}

/** What is stored under the key; null when nothing is (it expired meanwhile). */
export async function storedResponse(
  db: Queryable,
  id: IdempotencyKey,
): Promise<StoredResponse | null> {
  const { rows } = await db.query<StoredResponse>(
    `select request_hash, status_code, response_body from idempotency_keys
     where principal = $1::text and key = $2::text`,
    [id.principal, id.key],
  );
  return rows[0] ?? null;
}

/** Keeps the first request's response, to be replayed. */
export async function storeResponse(
  db: Queryable,
  id: IdempotencyKey,
  statusCode: number,
  body: string,
): Promise<void> {
  await db.query(
    `update idempotency_keys set status_code = $3::integer, response_body = $4::text
     where principal = $1::text and key = $2::text`,
    [id.principal, id.key, statusCode, body],
  );
}

/** Frees the key (the request failed with a 5xx: the client's retry runs it again). */
export async function releaseIdempotencyKey(db: Queryable, id: IdempotencyKey): Promise<void> {
  await db.query("delete from idempotency_keys where principal = $1::text and key = $2::text", [
    id.principal,
    id.key,
  ]);
}
