/**
 * The installation's public-id secret (docs/public-ids.md), read from the `public_id_key`
 * row that migration 0014 wrote with a random value: every process that shares the database
 * (API, workers, CLI through the API) shows the same ids. Read once per pool and kept.
 */
import type { Queryable } from "./db/pool.ts";
import { DatabaseError } from "./errors.ts";
import { makePublicIds, type PublicIds } from "./ids-public.ts";

const loaded = new WeakMap<Queryable, Promise<PublicIds>>();

async function load(db: Queryable): Promise<PublicIds> {
  const { rows } = await db.query(
    `select secret, legacy_delivery_max::text as delivery, legacy_attempt_max::text as attempt
     from public_id_key`,
  );
  const row = rows[0];
  if (!row) throw new DatabaseError("public_id_key has no row: migration 0014 did not run");
  return makePublicIds({
    secret: row.secret as Buffer,
    legacyMax: { delivery: Number(row.delivery), attempt: Number(row.attempt) },
  });
}

/** The public ids of the installation `db` belongs to (loaded on first use, then cached). */
export function publicIdsOf(db: Queryable): Promise<PublicIds> {
  let ids = loaded.get(db);
  if (!ids) {
    ids = load(db);
    loaded.set(db, ids);
    // a failed read (database unreachable) is tried again on the next use
    ids.catch(() => loaded.delete(db));
  }
  return ids;
}
