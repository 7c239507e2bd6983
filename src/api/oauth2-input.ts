/**
 * An endpoint's OAuth2 client credentials as requests and answers carry them
 * (docs/oauth2.md): `oauth2: { tokenUrl, clientId, clientSecret, scope, audience,
 * authMethod }`, or null for none. The client secret is sealed at rest
 * (endpoints.oauth2_secret) and answered as `***`; a `***` sent back keeps the stored one, so
 * a read-modify-write never stores the mask. Checked when saved: the token URL's scheme and
 * host (and the SSRF guard, in routes/endpoints.ts), the required fields, the auth method.
 * A PUT that leaves `oauth2` out keeps it, like the egress settings.
 */
import type { EndpointFields, OAuth2Column } from "../db/queries/endpoints.ts";
import { MASK } from "../security/redact.ts";
import type { SecretBox } from "../security/secret-box.ts";
import { apiError } from "./errors.ts";

/** How the client authenticates to the token endpoint (RFC 6749, section 2.3.1). */
export const OAUTH2_AUTH_METHODS = ["client_secret_basic", "client_secret_post"] as const;
export type OAuth2AuthMethod = (typeof OAUTH2_AUTH_METHODS)[number];

export interface OAuth2In {
  tokenUrl?: string;
  clientId?: string;
  clientSecret?: string;
  scope?: string | null;
  audience?: string | null;
  authMethod?: OAuth2AuthMethod;
}

/** endpoints.oauth2 as stored: every setting but the secret. */
export type OAuth2Settings = OAuth2Column;

/** The oauth2 columns of an answer's row (db/queries/endpoints.ts selects them). */
export interface OAuth2Row {
  oauth2: OAuth2Settings | null;
  has_oauth2_secret: boolean;
}

const text = (maxLength: number, description: string) =>
  ({ type: "string", minLength: 1, maxLength, description }) as const;

export const oauth2Properties = {
  oauth2: {
    type: ["object", "null"],
    additionalProperties: false,
    description:
      "OAuth2 client credentials (docs/oauth2.md): each request carries `Authorization: Bearer <token>`, the token fetched from tokenUrl with the client-credentials grant, cached until shortly before it expires and fetched again once when the receiver answers 401. tokenUrl, clientId and clientSecret are required; null removes it. The client secret is sealed at rest and answered as ***; sending *** back keeps it.",
    properties: {
      tokenUrl: text(
        2048,
        "the token endpoint: http:// or https://, no credentials; it must pass the SSRF guard like the endpoint's URL",
      ),
      clientId: text(1024, "the client id"),
      clientSecret: text(4096, "the client secret; sealed at rest, answered as ***"),
      scope: { type: ["string", "null"], maxLength: 1024, description: "the scope asked for" },
      audience: {
        type: ["string", "null"],
        maxLength: 1024,
        description: "the audience asked for (an `audience` form field, as Auth0 and others take)",
      },
      authMethod: {
        type: "string",
        enum: OAUTH2_AUTH_METHODS,
        description:
          "client_secret_basic (default): the id and secret in an HTTP Basic header; client_secret_post: as form fields",
      },
    },
  },
} as const;

/** The oauth2 field an endpoint answers with. */
export const oauth2ResponseProperties = {
  oauth2: {
    type: ["object", "null"],
    additionalProperties: false,
    properties: {
      tokenUrl: { type: "string" },
      clientId: { type: "string" },
      clientSecret: { type: ["string", "null"] },
      scope: { type: ["string", "null"] },
      audience: { type: ["string", "null"] },
      authMethod: { type: "string", enum: OAUTH2_AUTH_METHODS },
    },
  },
} as const;

const invalid = (detail: string) => apiError("invalid_oauth", detail);

/** A token URL as saved: http(s), a host, no credentials, no fragment; or a 422. */
export function checkTokenUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid("oauth2.tokenUrl is not a valid absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw invalid(`oauth2.tokenUrl must use http or https, not ${url.protocol.replace(":", "")}`);
  if (url.hostname === "") throw invalid("oauth2.tokenUrl has no host");
  if (url.username || url.password)
    throw invalid("oauth2.tokenUrl must not contain credentials: give clientId and clientSecret");
  if (url.hash) throw invalid("oauth2.tokenUrl must not have a fragment (#...)");
  return raw;
}

/**
 * The columns a body's oauth2 field writes (none when it is left out), checked, the secret
 * sealed; `current` says whether the endpoint keeps a secret that `***` may stand for.
 * `kind` is the endpoint's destination kind after the change: OAuth2 is HTTP's.
 */
export function oauth2Columns(
  body: { oauth2?: OAuth2In | null },
  current: OAuth2Row | null,
  kind: string,
  box: SecretBox,
): Partial<EndpointFields> {
  const given = body.oauth2;
  if (given === undefined) {
    if (current?.oauth2 && kind !== "http")
      throw invalid("oauth2 applies to HTTP endpoints only: remove it (oauth2: null) first");
    return {};
  }
  if (given === null) return { oauth2: null, oauth2_secret: null };
  if (kind !== "http") throw invalid("oauth2 applies to HTTP endpoints only, not a broker URL");
  for (const field of ["tokenUrl", "clientId", "clientSecret"] as const) {
    if (given[field] === undefined) throw invalid(`oauth2.${field} is required`);
  }
  const settings: OAuth2Settings = {
    tokenUrl: checkTokenUrl(given.tokenUrl!),
    clientId: given.clientId!,
    scope: given.scope ?? null,
    audience: given.audience ?? null,
    authMethod: given.authMethod ?? "client_secret_basic",
  };
  if (given.clientSecret === MASK) {
    if (!current?.has_oauth2_secret)
      throw invalid(
        `oauth2.clientSecret "${MASK}" is how answers mask it, and this endpoint keeps none: send the secret itself`,
      );
    return { oauth2: settings };
  }
  return { oauth2: settings, oauth2_secret: box.seal(given.clientSecret!) };
}

/** The token URL a body gives, for the SSRF guard's save-time check; null: none. */
export function tokenUrlToCheck(body: { oauth2?: OAuth2In | null }): string | null {
  const url = body.oauth2?.tokenUrl;
  return typeof url === "string" ? url : null;
}

/** The oauth2 field of an answer: the settings, the secret as `***`. */
export const oauth2Out = (r: OAuth2Row) => ({
  oauth2:
    r.oauth2 === null
      ? null
      : {
          tokenUrl: r.oauth2.tokenUrl,
          clientId: r.oauth2.clientId,
          clientSecret: r.has_oauth2_secret ? MASK : null,
          scope: r.oauth2.scope,
          audience: r.oauth2.audience,
          authMethod: r.oauth2.authMethod,
        },
});
