/**
 * Writing endpoints, shared by the management API (routes/endpoints.ts) and the tenant
 * portal (src/portal): create with a sealed secret, PUT/PATCH updates, the SSRF guard at
 * save time, and secret rotation. Callers have resolved the app and endpoint within the
 * caller's reach already.
 */
import { rotateSecret } from "../db/queries/endpoint-secrets.ts";
import { type EndpointRow, insertEndpoint, updateEndpoint } from "../db/queries/endpoints.ts";
import { notifyWork } from "../db/queries/work.ts";
import { generateSecret } from "../delivery/sign.ts";
import { ID_PREFIX, newId } from "../ids.ts";
import { SsrfBlockedError } from "../security/ssrf-guard.ts";
import type { ApiContext } from "./context.ts";
import {
  checkSecret,
  checkUrl,
  type EndpointIn,
  REPLACE_DEFAULTS,
  toColumns,
} from "./endpoint-input.ts";
import { apiError, notFound } from "./errors.ts";
import { conflictOnUnique } from "./unique-violation.ts";

/** Grace period of a rotation's old secret when the request names none: 24 h. */
export const DEFAULT_ROTATION_GRACE_SECONDS = 86_400;

export interface EndpointWrites {
  /** A new endpoint of the app (its secret the body's, or a generated one). */
  create(appId: string, body: EndpointIn): Promise<EndpointRow>;
  /** PUT (`replace`: the fields left out take their defaults) or PATCH. */
  update(endpointId: string, body: EndpointIn, replace: boolean): Promise<EndpointRow>;
  /** The SSRF guard at save time (it runs again at connect time, against DNS rebinding). */
  guardUrl(body: EndpointIn): Promise<void>;
  /** A new current secret (the body's or generated); the old one signs during the grace. */
  rotate(endpointId: string, key?: string | null, graceSeconds?: number | null): Promise<void>;
}

const uidTaken = conflictOnUnique("an endpoint with this uid already exists in this app");

export function makeEndpointWrites({
  pool,
  ssrfGuard,
  secretBox,
}: Pick<ApiContext, "pool" | "ssrfGuard" | "secretBox">): EndpointWrites {
  return {
    create: (appId, body) =>
      insertEndpoint(pool, {
        id: newId(ID_PREFIX.endpoint),
        appId,
        fields: toColumns(body),
        sealedSecret: secretBox.seal(body.secret ? checkSecret(body.secret) : generateSecret()),
      }).catch(uidTaken),

    async update(endpointId, body, replace) {
      const fields = { ...(replace ? REPLACE_DEFAULTS : {}), ...toColumns(body) };
      const row = await updateEndpoint(pool, endpointId, fields).catch(uidTaken);
      if (!row) throw notFound("endpoint");
      // Re-enabled: its waiting backlog is due again.
      if (body.disabled === false) await notifyWork(pool);
      return row;
    },

    async guardUrl(body) {
      if (body.url === undefined) return;
      checkUrl(body.url);
      try {
        await ssrfGuard.checkUrl(body.url);
      } catch (err) {
        if (err instanceof SsrfBlockedError) {
          throw apiError("url_not_allowed", `url is not allowed: ${err.message}`, { cause: err });
        }
        throw err;
      }
    },

    async rotate(endpointId, key, graceSeconds) {
      const next = key ? checkSecret(key) : generateSecret();
      await rotateSecret(
        pool,
        endpointId,
        secretBox.seal(next),
        graceSeconds ?? DEFAULT_ROTATION_GRACE_SECONDS,
      );
    },
  };
}
