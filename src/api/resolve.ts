/** Looking up the app and endpoint named in a path, by id or uid, within the caller's reach. */
import type { Queryable } from "../db/pool.ts";
import { notFound } from "../errors.ts";
import { type Principal, assertAppAccess } from "./auth.ts";

/** The app's id for an id or uid; 404 if absent or outside the principal's reach. */
export async function resolveAppId(db: Queryable, principal: Principal, idOrUid: string): Promise<string> {
  const { rows } = await db.query({
    name: "hookrelay_resolve_app",
    text: "select id from applications where id = $1::text or uid = $1::text order by (id = $1::text) desc limit 1",
    values: [idOrUid],
  });
  const id: string | undefined = rows[0]?.id;
  if (!id) throw notFound("application");
  assertAppAccess(principal, id);
  return id;
}

/** The endpoint's id for an id or uid within the app; 404 if absent. */
export async function resolveEndpointId(db: Queryable, appId: string, idOrUid: string): Promise<string> {
  const { rows } = await db.query(
    `select id from endpoints where app_id = $1::text and (id = $2::text or uid = $2::text)
     order by (id = $2::text) desc limit 1`,
    [appId, idOrUid],
  );
  const id: string | undefined = rows[0]?.id;
  if (!id) throw notFound("endpoint");
  return id;
}
