/**
 * The tenant portal's access links and sessions (docs/portal.md). A link (portal_tokens)
 * is app-scoped, expires and can be revoked; a session (portal_sessions) is what the
 * browser holds after opening a link, and is valid exactly while its link is. Only SHA-256
 * hashes of the secrets are stored.
 */
import type { Queryable } from "../pool.ts";

export interface PortalTokenRow {
  id: string;
  app_id: string;
  capabilities: string[];
  session_label: string | null;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = "id, app_id, capabilities, session_label, created_at, expires_at, revoked_at";

/** What a live session grants: one app, with these capabilities, until then. */
export interface PortalGrant {
  token_id: string;
  app_id: string;
  /** the app's name, shown in the portal's header */
  app_name: string;
  capabilities: string[];
  expires_at: Date;
}

export async function insertPortalToken(
  db: Queryable,
  t: {
    id: string;
    appId: string;
    hash: string;
    capabilities: string[];
    sessionLabel: string | null;
    expirySeconds: number;
  },
): Promise<PortalTokenRow> {
  const { rows } = await db.query<PortalTokenRow>(
    `insert into portal_tokens (id, app_id, token_hash, capabilities, session_label, expires_at)
     values ($1::text, $2::text, $3::text, $4::text[], $5::text,
             now() + $6::integer * interval '1 second')
     returning ${COLUMNS}`,
    [t.id, t.appId, t.hash, t.capabilities, t.sessionLabel, t.expirySeconds],
  );
  return rows[0]!;
}

/**
 * Deletes the links that ended (expired or revoked) more than a day ago, and with them
 * their sessions: one app's when a link is issued, every app's (`null`) when the
 * maintenance runner calls. Returns how many links went.
 */
export async function purgeEndedPortalTokens(db: Queryable, appId: string | null): Promise<number> {
  const { rowCount } = await db.query(
    `delete from portal_tokens
     where ($1::text is null or app_id = $1::text)
       and least(expires_at, coalesce(revoked_at, expires_at)) < now() - interval '1 day'`,
    [appId],
  );
  return rowCount ?? 0;
}

/** The live link with this hash (unrevoked, unexpired), or null. */
export async function livePortalToken(db: Queryable, hash: string): Promise<PortalGrant | null> {
  const { rows } = await db.query<PortalGrant>(
    `select t.id as token_id, t.app_id, a.name as app_name, t.capabilities, t.expires_at
     from portal_tokens t join applications a on a.id = t.app_id
     where t.token_hash = $1::text and t.revoked_at is null and t.expires_at > now()`,
    [hash],
  );
  return rows[0] ?? null;
}

/** The app's links, newest first (none of their secrets: only hashes are stored). */
export async function listPortalTokens(db: Queryable, appId: string): Promise<PortalTokenRow[]> {
  const { rows } = await db.query<PortalTokenRow>(
    `select ${COLUMNS} from portal_tokens where app_id = $1::text order by id desc`,
    [appId],
  );
  return rows;
}

/** Revokes one link of the app (and so its sessions); false when the app has no such link. */
export async function revokePortalToken(
  db: Queryable,
  appId: string,
  tokenId: string,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `update portal_tokens set revoked_at = coalesce(revoked_at, now())
     where id = $1::text and app_id = $2::text`,
    [tokenId, appId],
  );
  return rowCount !== 0;
}

/** Revokes the link with this hash, if live; false when there is none. */
export async function revokePortalTokenByHash(db: Queryable, hash: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `update portal_tokens set revoked_at = now()
     where token_hash = $1::text and revoked_at is null and expires_at > now()`,
    [hash],
  );
  return rowCount !== 0;
}

/**
 * Svix's expire-all: every live link of the app (or only those with one of `labels`)
 * expires in `inSeconds` (0 = now), unless it expires sooner anyway. Returns how many.
 */
export async function expireAppPortalTokens(
  db: Queryable,
  appId: string,
  inSeconds: number,
  labels: string[] | null,
): Promise<number> {
  const { rowCount } = await db.query(
    `update portal_tokens
     set expires_at = least(expires_at, now() + $2::integer * interval '1 second')
     where app_id = $1::text and revoked_at is null and expires_at > now()
       and ($3::text[] is null or session_label = any ($3::text[]))`,
    [appId, inSeconds, labels],
  );
  return rowCount ?? 0;
}

export async function insertPortalSession(
  db: Queryable,
  secretHash: string,
  tokenId: string,
): Promise<void> {
  await db.query(
    "insert into portal_sessions (secret_hash, token_id) values ($1::text, $2::text)",
    [secretHash, tokenId],
  );
}

/**
 * What the session with this hash grants, or null: looked up on every request (never
 * cached), through its link, so a revoked or expired link ends its sessions at once.
 */
export async function portalSessionGrant(
  db: Queryable,
  secretHash: string,
): Promise<PortalGrant | null> {
  const { rows } = await db.query<PortalGrant>({
    name: "hookrelay_portal_session",
    text: `select t.id as token_id, t.app_id, a.name as app_name, t.capabilities, t.expires_at
           from portal_sessions s join portal_tokens t on t.id = s.token_id
           join applications a on a.id = t.app_id
           where s.secret_hash = $1::text and t.revoked_at is null and t.expires_at > now()`,
    values: [secretHash],
  });
  return rows[0] ?? null;
}

export async function deletePortalSession(db: Queryable, secretHash: string): Promise<void> {
  await db.query("delete from portal_sessions where secret_hash = $1::text", [secretHash]);
}
