/**
 * Rewrites every stored signing secret (and every endpoint's URL token and broker password)
 * under the current encryption key: plain ones get sealed (a key was added), ones sealed
 * under a previous key get re-sealed (the key was rotated), sealed ones get opened when no
 * key is configured any more. Batches of rows, each batch its own statement; safe to
 * interrupt and run again, and resumable from the returned cursor (`after`) when run in
 * slices, as the API route does.
 */
import type { Pool } from "../db/pool.ts";
import {
  rewriteSealedValues,
  SEALED_ENDPOINT_COLUMNS,
  type SealedEndpointColumn,
  sealedValuesAfter,
} from "../db/queries/endpoint-sealed-columns.ts";
import { rewriteSecrets, secretsAfter } from "../db/queries/endpoint-secrets.ts";
import { rewriteUrlTokens, urlTokensAfter } from "../db/queries/endpoints.ts";
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
  // and the endpoints' other sealed values (a broker url's password: docs/destinations.md)
  if (after === 0) {
    for (const column of SEALED_ENDPOINT_COLUMNS) {
      changed += await reencryptColumn(pool, box, column, batch, (n) =>
        options.onProgress?.(changed + n),
      );
    }
  }
  for (;;) {
    const rows = await secretsAfter(pool, after, batch);
    const last = rows.at(-1);
    if (last === undefined) return { changed, after, done: true };
    after = Number(last.id);
    const stale = rows.filter((r) => box.needsReseal(r.secret));
    if (stale.length > 0) {
      await rewriteSecrets(
        pool,
        stale.map((r) => ({ id: r.id, secret: box.seal(box.open(r.secret)) })),
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
    const rows = await urlTokensAfter(pool, after, batch);
    const last = rows.at(-1);
    if (last === undefined) return changed;
    after = last.id;
    const stale = rows.filter((r) => box.needsReseal(r.url_token));
    if (stale.length > 0) {
      await rewriteUrlTokens(
        pool,
        stale.map((r) => ({ id: r.id, url_token: box.seal(box.open(r.url_token)) })),
      );
      changed += stale.length;
      onProgress?.(changed);
    }
    if (rows.length < batch) return changed;
  }
}

/** Re-seals every endpoint's value in one sealed column; returns how many changed. */
async function reencryptColumn(
  pool: Pool,
  box: SecretBox,
  column: SealedEndpointColumn,
  batch: number,
  onProgress: (changed: number) => void,
): Promise<number> {
  let after = "";
  let changed = 0;
  for (;;) {
    const rows = await sealedValuesAfter(pool, column, after, batch);
    const last = rows.at(-1);
    if (last === undefined) return changed;
    after = last.id;
    const stale = rows.filter((r) => box.needsReseal(r.value));
    if (stale.length > 0) {
      await rewriteSealedValues(
        pool,
        column,
        stale.map((r) => ({ id: r.id, value: box.seal(box.open(r.value)) })),
      );
      changed += stale.length;
      onProgress(changed);
    }
    if (rows.length < batch) return changed;
  }
}
