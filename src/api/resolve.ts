/**
 * Looking up the app and endpoint named in a path or query, by id or uid, within the
 * caller's reach. An id always wins over a uid (db/queries/applications.ts, endpoints.ts).
 */
import { type BatchLoader, makeBatchLoader } from "../db/batch-loader.ts";
import type { Queryable } from "../db/pool.ts";
import { appIdsByIdOrUid } from "../db/queries/applications.ts";
import { endpointsByIdOrUid } from "../db/queries/endpoints.ts";
import { assertAppAccess, type Principal } from "./auth.ts";
import { badRequest, notFound } from "./errors.ts";

// One loader per pool: concurrent requests naming apps share one query.
const appLoaders = new WeakMap<Queryable, BatchLoader<string, string>>();

function appLoader(db: Queryable): BatchLoader<string, string> {
  let loader = appLoaders.get(db);
  if (!loader) {
    loader = makeBatchLoader((idsOrUids) => appIdsByIdOrUid(db, idsOrUids));
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
  const [found] = await endpointsByIdOrUid(db, idOrUid, appId);
  if (!found) throw notFound("endpoint");
  return found.id;
}

/**
 * The endpoint's id for an id, or a uid within the key's app; an admin key may name an
 * endpoint of any app, by id or by a uid only one app uses. 404 if absent or out of reach.
 */
export async function resolveAnyEndpointId(
  db: Queryable,
  principal: Principal,
  idOrUid: string,
): Promise<string> {
  const own = principal.role === "app" ? principal.appId : null;
  const [first, second] = await endpointsByIdOrUid(db, idOrUid, own);
  if (!first) throw notFound("endpoint");
  if (second && first.id !== idOrUid)
    throw badRequest("that uid names endpoints of several apps; use the endpoint id");
  assertAppAccess(principal, first.app_id);
  return first.id;
}

/**
 * An endpoint named in a filter (`endpoint_id=`, `endpointId`): within the app when the
 * request is limited to one (named, or the key's own), else any the key may see. Every
 * route that takes an endpoint filter resolves it here, so an unknown one is a 404 there
 * too, never an empty answer.
 */
export async function resolveEndpointFilter(
  db: Queryable,
  principal: Principal,
  appId: string | null,
  idOrUid: string,
): Promise<string> {
  return appId
    ? resolveEndpointId(db, appId, idOrUid)
    : resolveAnyEndpointId(db, principal, idOrUid);
}
