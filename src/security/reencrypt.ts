/**
 * Rewrites every stored signing secret (and every endpoint's URL token) under the current encryption key: plain ones get
 * sealed (a key was added), ones sealed under a previous key get re-sealed (the key was
 * rotated), sealed ones get opened when no key is configured any more. Batches of rows,
 * each batch its own statement; safe to interrupt and run again, and resumable from the
 * returned cursor (`after`) when run in slices, as the API route does.
 */
import type { Pool } from "../db/pool.ts";
import type { SecretBox } from "./secret-box.ts";

export interface ReencryptOptions {
  /** start after this endpoint_secrets id (a previous slice's cursor) */
  after?: number;
  /** stop after the batch that passes this time (epoch ms) */
  until?: number;
  /** hears the running count after each batch that changed rows */
  onProgress?: (changed: number) => void;
  batch?: number;
}

export interface ReencryptResult {
  /** secrets rewritten by this call */
  changed: number;
  /** cursor: the last id looked at */
  after: number;
  /** true when every secret has been looked at */
  done: boolean;
}

export async function reencryptSecrets(
  pool: Pool,
  box: SecretBox,
  options: ReencryptOptions = {},
): Promise<ReencryptResult> {
  const batch = options.batch ?? 500;
  const until = options.until ?? Number.POSITIVE_INFINITY;
  let after = options.after ?? 0;
  // the endpoints' URL tokens (postback templates) first, all in the first slice: an
  // endpoint has at most one, so there are far fewer of them than of secrets
  let changed = after === 0 ? await reencryptUrlTokens(pool, box, batch, options.onProgress) : 0;
  for (;;) {
    const { rows } = await pool.query(
      "select id, secret from endpoint_secrets where id > $1::bigint order by id limit $2::integer",
      [after, batch],
    );
    if (rows.length === 0) return { changed, after, done: true };
    after = Number(rows[rows.length - 1].id);
    const stale = rows.filter((r) => box.needsReseal(r.secret));
    if (stale.length > 0) {
      await pool.query(
        `update endpoint_secrets s set secret = r.secret
         from unnest($1::bigint[], $2::text[]) as r(id, secret) where s.id = r.id`,
        [stale.map((r) => r.id), stale.map((r) => box.seal(box.open(r.secret)))],
      );
      changed += stale.length;
      options.onProgress?.(changed);
    }
    if (rows.length < batch) return { changed, after, done: true };
    if (Date.now() >= until) return { changed, after, done: false };
  }
}

/** Re-seals every endpoint's URL token (the value of {$token}); returns how many changed. */
async function reencryptUrlTokens(
  pool: Pool,
  box: SecretBox,
  batch: number,
  onProgress: ((changed: number) => void) | undefined,
): Promise<number> {
  let after = "";
  let changed = 0;
  for (;;) {
    const { rows } = await pool.query(
      `select id, url_token from endpoints
       where url_token is not null and id > $1::text order by id limit $2::integer`,
      [after, batch],
    );
    if (rows.length === 0) return changed;
    after = rows[rows.length - 1].id;
    const stale = rows.filter((r) => box.needsReseal(r.url_token));
    if (stale.length > 0) {
      await pool.query(
        `update endpoints e set url_token = r.token
         from unnest($1::text[], $2::text[]) as r(id, token) where e.id = r.id`,
        [stale.map((r) => r.id), stale.map((r) => box.seal(box.open(r.url_token)))],
      );
      changed += stale.length;
      onProgress?.(changed);
    }
    if (rows.length < batch) return changed;
  }
}
