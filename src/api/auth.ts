/**
 * Bearer-key authentication. Keys are stored as SHA-256 hashes; the key from
 * HOOKRELAY_ADMIN_KEY, if set, is also an admin key. An app-scoped key sees only its app:
 * anything of another app answers 404, never 403, so existence is not revealed.
 *
 * Every failure is the same 401, whatever was wrong (missing, malformed, bad checksum,
 * unknown, revoked). Malformed keys are refused before any database lookup. Revocation
 * takes effect at once: keys are looked up on every request, never cached.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyRequest } from "fastify";
import { makeBatchLoader } from "../db/batch-loader.ts";
import type { Queryable } from "../db/pool.ts";
import {
  type ApiKeyRow,
  activeKeysByHash,
  hasActiveAdminKey,
  insertApiKey,
} from "../db/queries/api-keys.ts";
import { ID_PREFIX, newId } from "../ids.ts";
import { checkApiKey, generateApiKey } from "../security/api-key-format.ts";
import { apiError, notFound } from "./errors.ts";

export type Principal =
  | { role: "admin"; keyId: string }
  | { role: "app"; keyId: string; appId: string };

declare module "fastify" {
  interface FastifyRequest {
    principal: Principal;
  }
}

export const hashKey = (key: string) => createHash("sha256").update(key).digest("hex");

const unauthorized = () =>
  apiError("unauthorized", "missing or invalid API key (Authorization: Bearer <key>)");

/** Who is asking: the request's principal, or a thrown 401. */
export type Authenticate = (request: FastifyRequest) => Promise<Principal>;

/** The principal a key stands for, or null for a key that is not (or no longer) valid. */
export type CheckKey = (key: string) => Promise<Principal | null>;

/** Checks keys against the stored ones and HOOKRELAY_ADMIN_KEY (the bearer keys, and the dashboard's sign-in). */
export function makeKeyChecker(db: Queryable, envAdminKey: string | undefined): CheckKey {
  const envHash = envAdminKey ? Buffer.from(hashKey(envAdminKey), "hex") : null;
  // Concurrent requests' key lookups share one query (no caching: revocation is immediate).
  const keys = makeBatchLoader((hashes: string[]) => activeKeysByHash(db, hashes));
  return async function checkKey(key: string): Promise<Principal | null> {
    if (key.length > 256) return null;
    const hash = hashKey(key);
    if (envHash && timingSafeEqual(envHash, Buffer.from(hash, "hex"))) {
      return { role: "admin", keyId: "env" };
    }
    if (!checkApiKey(key)) return null;
    const row = await keys.load(hash);
    if (!row) return null;
    return row.role === "admin"
      ? { role: "admin", keyId: row.id }
      : // an app key always has its app (a check constraint says so)
        { role: "app", keyId: row.id, appId: row.app_id! };
  };
}

/** Bearer-key authentication against the stored keys and HOOKRELAY_ADMIN_KEY. */
export function makeAuthenticator(checkKey: CheckKey): Authenticate {
  return async function authenticate(request: FastifyRequest): Promise<Principal> {
    const header = request.headers.authorization;
    const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) throw unauthorized();
    const principal = await checkKey(match[1]!);
    if (!principal) throw unauthorized();
    return principal;
  };
}

/** Throws 404 unless the principal may see `appId`. */
export function assertAppAccess(principal: Principal, appId: string): void {
  if (principal.role === "app" && principal.appId !== appId) throw notFound("application");
}

/** Creates an API key; returns its row and the key itself, which is never stored. */
export async function createApiKey(
  db: Queryable,
  options: { role: "admin" } | { role: "app"; appId: string },
  name = "",
): Promise<ApiKeyRow & { key: string }> {
  const key = generateApiKey(options.role);
  const row = await insertApiKey(db, {
    id: newId(ID_PREFIX.apiKey),
    name,
    hash: hashKey(key),
    role: options.role,
    appId: options.role === "app" ? options.appId : null,
  });
  return { ...row, key };
}

/** On first start (no admin key stored yet): creates one and returns it, to be printed once. */
export async function ensureFirstAdminKey(db: Queryable): Promise<string | null> {
  if (await hasActiveAdminKey(db)) return null;
  const { key } = await createApiKey(db, { role: "admin" }, "generated on first start");
  return key;
}
