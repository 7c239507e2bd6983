/**
 * Delivery and attempt ids in requests (docs/public-ids.md): the shown form `dlv_Q3fZ08kTb1x`,
 * and the old `dlv_17` or bare `17` (always for admin keys; for an app-scoped key only the
 * numbers shown before ids became opaque). An id with no id's shape is 400, one that names
 * nothing the caller may see is 404 like any id of a row that does not exist (as an iterator:
 * 400, since a listing's position cannot be "not found").
 */
import type { Pool } from "../db/pool.ts";
import { type IdReader, PUBLIC_ID_PREFIX, type PublicIdKind } from "../ids-public.ts";
import { publicIdsOf } from "../ids-public-key.ts";
import type { Principal } from "./auth.ts";
import { badRequest, notFound } from "./errors.ts";

const readerOf = (principal: Principal): IdReader =>
  principal.role === "app" ? "tenant" : "operator";

const shape = (kind: PublicIdKind) => `${PUBLIC_ID_PREFIX[kind]}... as shown by the API`;

/** The row key of the delivery or attempt `raw` names: 400 or 404 when it names none. */
export async function rowKeyOf(
  pool: Pool,
  principal: Principal,
  kind: PublicIdKind,
  raw: string,
): Promise<number> {
  const read = (await publicIdsOf(pool)).read(kind, raw, readerOf(principal));
  if (read.ok) return read.id;
  if (read.reason === "malformed")
    throw badRequest(`not ${kind === "attempt" ? "an" : "a"} ${kind} id (${shape(kind)})`);
  throw notFound(kind);
}

/** The row key of a listing's iterator (a delivery or attempt id): 400 when it names none. */
export async function cursorKeyOf(
  pool: Pool,
  principal: Principal,
  kind: PublicIdKind,
  raw: string,
): Promise<number> {
  const read = (await publicIdsOf(pool)).read(kind, raw, readerOf(principal));
  if (read.ok) return read.id;
  throw badRequest(`iterator is not valid for this listing (${shape(kind)})`);
}
