/** dashboard_sessions: signed-in browsers of the operator dashboard (docs/dashboard.md). */
import type { Queryable } from "../pool.ts";

export interface DashboardSessionRow {
  key_id: string;
  role: "admin" | "app";
  app_id: string | null;
  expires_at: Date;
}

export async function insertDashboardSession(
  db: Queryable,
  s: {
    tokenHash: string;
    keyHash: string;
    keyId: string;
    role: "admin" | "app";
    appId: string | null;
    ttlMs: number;
  },
): Promise<Date> {
  const { rows } = await db.query<{ expires_at: Date }>(
    `insert into dashboard_sessions (token_hash, key_hash, key_id, role, app_id, expires_at)
     values ($1::text, $2::text, $3::text, $4::text, $5::text,
             now() + $6::bigint * interval '1 millisecond')
     returning expires_at`,
    [s.tokenHash, s.keyHash, s.keyId, s.role, s.appId, s.ttlMs],
  );
  return rows[0]!.expires_at;
}

/**
 * The live session with this token hash: not expired, and its key still valid (a stored
 * key not revoked, or the configured HOOKRELAY_ADMIN_KEY, given here by its hash).
 */
export async function liveDashboardSession(
  db: Queryable,
  tokenHash: string,
  envKeyHash: string | null,
): Promise<DashboardSessionRow | null> {
  const { rows } = await db.query<DashboardSessionRow>({
    name: "hookrelay_dashboard_session",
    text: `select s.key_id, s.role, s.app_id, s.expires_at
             from dashboard_sessions s
             where s.token_hash = $1::text and s.expires_at > now()
               and (s.key_hash = $2::text
                    or exists (select 1 from api_keys k
                               where k.key_hash = s.key_hash and k.revoked_at is null))`,
    values: [tokenHash, envKeyHash],
  });
  return rows[0] ?? null;
}

export async function deleteDashboardSession(db: Queryable, tokenHash: string): Promise<void> {
  await db.query("delete from dashboard_sessions where token_hash = $1::text", [tokenHash]);
}

/** Deletes expired sessions (maintenance); returns how many. */
export async function purgeDashboardSessions(db: Queryable): Promise<number> {
  const { rowCount } = await db.query("delete from dashboard_sessions where expires_at <= now()");
  return rowCount ?? 0;
}
