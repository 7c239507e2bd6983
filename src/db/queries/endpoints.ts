/** Endpoints of an app: the rows behind /api/v1/app/{app}/endpoint. */
import type { PolicyColumns } from "../../domain/endpoint-policy.ts";
import { POLICY_COLUMN_TYPES, POLICY_SELECT_LIST } from "../../domain/endpoint-policy-derived.ts";
import { assignments, type ColumnMap, columnList } from "../column-map.ts";
import type { Queryable } from "../pool.ts";
import { insertSecrets, type NewSecret } from "./endpoint-secrets.ts";
import type { PageWindow } from "./page-window.ts";

/** The columns an endpoint's create, replace or patch may write. */
export interface EndpointFields extends PolicyColumns {
  uid: string | null;
  url: string;
  description: string;
  event_types: string[] | null;
  channels: string[] | null;
  disabled: boolean;
  disabled_reason: string | null;
  metadata: Record<string, string>;
  headers: Record<string, string>;
  // (and the delivery policy's columns, domain/endpoint-policy.ts)
  // postback endpoints (migration 0010; README.md, Postbacks)
  method: "POST" | "GET" | "PUT";
  body_format: "json" | "form";
  /** sealed (security/secret-box.ts); never read back by the API */
  url_token: string | null;
  missing_fields: "fail" | "empty";
  success_rule: SuccessRuleRow | null;
  // broker destinations (migration 0029; docs/destinations.md)
  /** from the url's scheme */
  destination_kind: "http" | "amqp" | "nats";
  /** a broker url's password, sealed; never read back by the API */
  destination_secret: string | null;
  // egress (migration 0028; docs/egress.md)
  egress_pool: string | null;
  /** the endpoint's own proxy, without its password */
  proxy_url: string | null;
  /** sealed, as the three below: never read back by the API */
  proxy_secret: string | null;
  tls_client_cert: string | null;
  tls_client_key: string | null;
  tls_ca: string | null;
  // OAuth2 client credentials (migration 0030; docs/oauth2.md)
  oauth2: OAuth2Column | null;
  /** the client secret, sealed; never read back by the API */
  oauth2_secret: string | null;
}

/** endpoints.oauth2 as stored: every OAuth2 setting but the secret (api/oauth2-input.ts). */
export interface OAuth2Column {
  tokenUrl: string;
  clientId: string;
  scope: string | null;
  audience: string | null;
  authMethod: "client_secret_basic" | "client_secret_post";
}

/** endpoints.success_rule as stored; what it means is delivery/success-rule.ts. */
export interface SuccessRuleRow {
  bodyContains?: string[];
  bodyNotContains?: string[];
  ignoreCase?: boolean;
  onFailure?: "retry" | "permanent";
}

const FIELD_TYPES: ColumnMap<EndpointFields> = {
  uid: "text",
  url: "text",
  description: "text",
  event_types: "text[]",
  channels: "text[]",
  disabled: "boolean",
  disabled_reason: "text",
  metadata: "jsonb",
  headers: "jsonb",
  // the delivery policy (domain/endpoint-policy.ts)
  ...POLICY_COLUMN_TYPES,
  // postback endpoints
  method: "text",
  body_format: "text",
  url_token: "text",
  missing_fields: "text",
  success_rule: "jsonb",
  // broker destinations
  destination_kind: "text",
  destination_secret: "text",
  // egress
  egress_pool: "text",
  proxy_url: "text",
  proxy_secret: "text",
  tls_client_cert: "text",
  tls_client_key: "text",
  tls_ca: "text",
  // OAuth2
  oauth2: "jsonb",
  oauth2_secret: "text",
};

const INSERT_TYPES: ColumnMap<EndpointFields & { id: string; app_id: string }> = {
  id: "text",
  app_id: "text",
  ...FIELD_TYPES,
};

/**
 * An endpoint as the API shows it (headers stay inside: they may carry credentials; of the
 * URL token only whether there is one).
 */
export interface EndpointRow
  extends Omit<
    EndpointFields,
    | "headers"
    | "url_token"
    | "destination_secret"
    | "proxy_secret"
    | "tls_client_cert"
    | "tls_client_key"
    | "oauth2_secret"
  > {
  has_url_token: boolean;
  /** a broker url's password is kept (answers show it as ***) */
  has_destination_secret: boolean;
  /** egress: a proxy password and a client certificate are kept (answers show ***) */
  has_proxy_secret: boolean;
  has_tls_client_cert: boolean;
  /** OAuth2: a client secret is kept (answers show ***) */
  has_oauth2_secret: boolean;
  id: string;
  app_id: string;
  /** the schemes of its current signing keys: "v1", "v1a" or "v1+v1a" (endpoint-secrets.ts) */
  signature_scheme: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `id, app_id, uid, url, description, event_types, channels, disabled, disabled_reason,
  metadata, ${POLICY_SELECT_LIST},
  method, body_format, url_token is not null as has_url_token, missing_fields, success_rule,
  destination_kind, destination_secret is not null as has_destination_secret,
  egress_pool, proxy_url, proxy_secret is not null as has_proxy_secret,
  tls_client_cert is not null as has_tls_client_cert, tls_ca,
  oauth2, oauth2_secret is not null as has_oauth2_secret,
  created_at, updated_at,
  (select string_agg(distinct s.scheme, '+' order by s.scheme) from endpoint_secrets s
   where s.endpoint_id = endpoints.id and s.expires_at is null) as signature_scheme`;

/**
 * Endpoints named by `idOrUid` (an id, or a uid), within one app or, with `appId` null,
 * across apps; the one whose id it is comes first. At most two: enough to tell that a uid
 * is ambiguous across apps (uids are unique per app only).
 */
export async function endpointsByIdOrUid(
  db: Queryable,
  idOrUid: string,
  appId: string | null,
): Promise<Array<{ id: string; app_id: string }>> {
  const { rows } = await db.query<{ id: string; app_id: string }>(
    `select id, app_id from endpoints
     where (id = $1::text or uid = $1::text) and ($2::text is null or app_id = $2::text)
     order by (id = $1::text) desc limit 2`,
    [idOrUid, appId],
  );
  return rows;
}

export async function getEndpoint(db: Queryable, id: string): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `select ${COLUMNS} from endpoints where id = $1::text`,
    [id],
  );
  return rows[0] ?? null;
}

/** The endpoint, its row locked for the rest of the transaction `db` is in; null if none. */
export async function lockEndpoint(db: Queryable, id: string): Promise<EndpointRow | null> {
  const { rows } = await db.query<EndpointRow>(
    `select ${COLUMNS} from endpoints where id = $1::text for update`,
    [id],
  );
  return rows[0] ?? null;
}

/** A page of the app's endpoints in id order. */
export async function listEndpoints(
  db: Queryable,
  appId: string,
  page: PageWindow,
): Promise<EndpointRow[]> {
  const { rows } = await db.query<EndpointRow>(
    `select ${COLUMNS} from endpoints
     where app_id = $1::text and ($2::text is null or id ${page.op} $2::text)
     order by id ${page.direction} limit $3::integer`,
    [appId, page.cursor, page.limit],
  );
  return rows;
}

/**
 * Inserts an endpoint and its first signing keys (already sealed); `db` should be a
 * transaction, so the two commit together. A uid taken in the app fails with PostgreSQL's
 * unique violation (23505).
 */
export async function insertEndpoint(
  db: Queryable,
  endpoint: {
    id: string;
    appId: string;
    fields: Partial<EndpointFields>;
    secrets: readonly NewSecret[];
  },
): Promise<EndpointRow> {
  const list = columnList(INSERT_TYPES, {
    ...endpoint.fields,
    id: endpoint.id,
    app_id: endpoint.appId,
  });
  await db.query(
    `insert into endpoints (${list.names.join(", ")}) values (${list.placeholders.join(", ")})`,
    list.params,
  );
  await insertSecrets(db, endpoint.id, endpoint.secrets);
  return (await getEndpoint(db, endpoint.id))!;
}

/**
 * Sets the fields given (the others keep their values); null when there is no such
 * endpoint. A uid taken in the app fails with 23505.
 */
export async function updateEndpoint(
  db: Queryable,
  id: string,
  fields: Partial<EndpointFields>,
): Promise<EndpointRow | null> {
  const { sets, params } = assignments(FIELD_TYPES, fields, 2);
  const { rows } = await db.query<EndpointRow>(
    `update endpoints set ${[...sets, "updated_at = now()"].join(", ")}
     where id = $1::text returning ${COLUMNS}`,
    [id, ...params],
  );
  return rows[0] ?? null;
}

/** The endpoints of an app, each as an operational event names it (id order). */
export async function endpointSubjectsOfApp(
  db: Queryable,
  appId: string,
): Promise<{ id: string; app_id: string; uid: string | null }[]> {
  const { rows } = await db.query(
    "select id, app_id, uid from endpoints where app_id = $1::text order by id",
    [appId],
  );
  return rows;
}

/** Deletes an endpoint and everything of it; returns what it was, null if there was none. */
export async function deleteEndpoint(
  db: Queryable,
  id: string,
): Promise<{ id: string; app_id: string; uid: string | null } | null> {
  // attempts carry no foreign key (they are inserted on the hot path), so the cascade from
  // endpoints does not reach them
  const { rows } = await db.query(
    `with attempts_gone as (delete from attempts where endpoint_id = $1::text)
     delete from endpoints where id = $1::text returning id, app_id, uid`,
    [id],
  );
  return rows[0] ?? null;
}

/** An endpoint's stored URL token as its re-encryption (security/reencrypt.ts) reads it. */
export interface StoredUrlToken {
  id: string;
  /** sealed, or plain when it was stored without an encryption key */
  url_token: string;
}

/**
 * The endpoints that have a URL token, in id order: the `limit` after id `after` ("" for
 * the first page; every id sorts after it).
 */
export async function urlTokensAfter(
  db: Queryable,
  after: string,
  limit: number,
): Promise<StoredUrlToken[]> {
  const { rows } = await db.query<StoredUrlToken>(
    `select id, url_token from endpoints
     where url_token is not null and id > $1::text order by id limit $2::integer`,
    [after, limit],
  );
  return rows;
}

/** Stores each endpoint's new URL token (re-sealed) by id; one statement for all of them. */
export async function rewriteUrlTokens(
  db: Queryable,
  tokens: readonly StoredUrlToken[],
): Promise<void> {
  await db.query(
    `update endpoints e set url_token = r.token
     from unnest($1::text[], $2::text[]) as r(id, token) where e.id = r.id`,
    [tokens.map((t) => t.id), tokens.map((t) => t.url_token)],
  );
}
