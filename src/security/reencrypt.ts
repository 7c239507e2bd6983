/**
 * Rewrites every stored signing secret under the current encryption key: plain ones get
 * sealed (a key was added), ones sealed under a previous key get re-sealed (the key was
 * rotated), sealed ones get opened when no key is configured any more. Batches of rows,
 * each batch its own statement; safe to interrupt and run again.
 */
import type { Pool } from "../db/pool.ts";
import type { SecretBox } from "./secret-box.ts";

export async function reencryptSecrets(
  pool: Pool,
  box: SecretBox,
  onProgress?: (done: number) => void,
  batch = 500,
): Promise<number> {
  let after = 0;
  let changed = 0;
  for (;;) {
    const { rows } = await pool.query(
      "select id, secret from endpoint_secrets where id > $1::bigint order by id limit $2::integer",
      [after, batch],
    );
    if (rows.length === 0) return changed;
    after = rows[rows.length - 1].id;
    const stale = rows.filter((r) => box.needsReseal(r.secret));
    if (stale.length > 0) {
      await pool.query(
        `update endpoint_secrets s set secret = r.secret
         from unnest($1::bigint[], $2::text[]) as r(id, secret) where s.id = r.id`,
        [stale.map((r) => r.id), stale.map((r) => box.seal(box.open(r.secret)))],
      );
      changed += stale.length;
      onProgress?.(changed);
    }
  }
}
