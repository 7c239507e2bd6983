/** Looking up the app and endpoint named in a path, by id or uid, within the caller's reach. */
import { type BatchLoader, makeBatchLoader } from "../db/batch-loader.ts";
import type { Queryable } from "../db/pool.ts";
import { notFound } from "../errors.ts";
import { assertAppAccess, type Principal } from "./auth.ts";

// One loader per pool: concurrent requests naming apps share one query.
const appLoaders = new WeakMap<Queryable, BatchLoader<string, string>>();

function appLoader(db: Queryable): BatchLoader<string, string> {
  let loader = appLoaders.get(db);
  if (!loader) {
    loader = makeBatchLoader(async (names) => {
      const { rows } = await db.query({
        name: "hookrelay_resolve_apps",
        text: `select id, uid from applications where id = any ($1::text[]) or uid = any ($1::text[])`,
        values: [names],
      });
      const found = new Map<string, string>();
      // A uid never shadows an id: ids first.
      for (const r of rows) if (r.uid) found.set(r.uid, r.id);
      for (const r of rows) found.set(r.id, r.id);
      return found;
    });
    appLoaders.set(db, loader);
  }
  return loader;
}

/** The app's id for an id or uid; 404 if absent or outside the principal's reach. */
export async function resolveAppId(
  db: Queryable,
  principal: Principal,
  idOrUid: string,
): Promise<string> {
  const id = await appLoader(db).load(idOrUid);
  if (!id) throw notFound("application");
  assertAppAccess(principal, id);
  return id;
}

/** The endpoint's id for an id or uid within the app; 404 if absent. */
export async function resolveEndpointId(
  db: Queryable,
  appId: string,
  idOrUid: string,
): Promise<string> {
  const { rows } = await db.query(
    `select id from endpoints where app_id = $1::text and (id = $2::text or uid = $2::text)
     order by (id = $2::text) desc limit 1`,
    [appId, idOrUid],
  );
  const id: string | undefined = rows[0]?.id;
  if (!id) throw notFound("endpoint");
  return id;
}
