/**
 * Endpoint columns that hold a value sealed at rest (security/secret-box.ts) besides the
 * URL token (endpoints.ts's urlTokensAfter): the pages and updates re-encryption
 * (security/reencrypt.ts) walks for each. A column is one of a fixed list, never text
 * from a caller.
 */
import type { Queryable } from "../pool.ts";

/** The sealed endpoint columns re-encryption walks besides url_token. */
export const SEALED_ENDPOINT_COLUMNS = [
  "destination_secret",
  // egress (docs/egress.md): the endpoint's proxy password, its client certificate and key
  "proxy_secret",
  "tls_client_cert",
  "tls_client_key",
  // OAuth2 (docs/oauth2.md): the client secret
  "oauth2_secret",
] as const;
export type SealedEndpointColumn = (typeof SEALED_ENDPOINT_COLUMNS)[number];

export interface SealedValue {
  id: string;
  value: string;
}

/** A page of endpoints with a value in `column`, after endpoint id `after`, in id order. */
export async function sealedValuesAfter(
  db: Queryable,
  column: SealedEndpointColumn,
  after: string,
  limit: number,
): Promise<SealedValue[]> {
  if (!SEALED_ENDPOINT_COLUMNS.includes(column)) throw new Error(`not a sealed column: ${column}`);
  const { rows } = await db.query<SealedValue>(
    `select id, ${column} as value from endpoints
     where ${column} is not null and id > $1::text order by id limit $2::integer`,
    [after, limit],
  );
  return rows;
}

/** Stores each endpoint's new value of `column` (re-sealed) by id; one statement for all. */
export async function rewriteSealedValues(
  db: Queryable,
  column: SealedEndpointColumn,
  values: readonly SealedValue[],
): Promise<void> {
  if (!SEALED_ENDPOINT_COLUMNS.includes(column)) throw new Error(`not a sealed column: ${column}`);
  await db.query(
    `update endpoints e set ${column} = r.value
     from unnest($1::text[], $2::text[]) as r(id, value) where e.id = r.id`,
    [values.map((v) => v.id), values.map((v) => v.value)],
  );
}
