/** API keys, stored as SHA-256 hashes of the key (api/auth.ts). */
import type { Queryable } from "../pool.ts";

export interface ApiKeyRow {
  id: string;
  name: string;
  role: "admin" | "app";
  /** set exactly for app keys (a check constraint says so) */
  app_id: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

const COLUMNS = "id, name, role, app_id, created_at, revoked_at";

/** The unrevoked keys among `hashes`, by hash. */
export async function activeKeysByHash(
  db: Queryable,
  hashes: readonly string[],
): Promise<Map<string, Pick<ApiKeyRow, "id" | "role" | "app_id">>> {
  const { rows } = await db.query<Pick<ApiKeyRow, "id" | "role" | "app_id"> & { key_hash: string }>(
    {
      name: "hookrelay_auth_keys",
      text: `select key_hash, id, role, app_id from api_keys
             where key_hash = any ($1::text[]) and revoked_at is null`,
      values: [hashes],
    },
  );
  return new Map(rows.map(({ key_hash, ...key }) => [key_hash, key]));
}

export async function insertApiKey(
  db: Queryable,
  key: { id: string; name: string; hash: string; role: "admin" | "app"; appId: string | null },
): Promise<ApiKeyRow> {
  const { rows } = await db.query<ApiKeyRow>(
    `insert into api_keys (id, name, key_hash, role, app_id)
     values ($1::text, $2::text, $3::text, $4::text, $5::text) returning ${COLUMNS}`,
    [key.id, key.name, key.hash, key.role, key.appId],
  );
  return rows[0]!;
}

/** True when an unrevoked admin key is stored. */
export async function hasActiveAdminKey(db: Queryable): Promise<boolean> {
  const { rows } = await db.query(
    "select 1 from api_keys where role = 'admin' and revoked_at is null limit 1",
  );
  return rows.length > 0;
}

/** True when `id` is an unrevoked admin key whose hash is `hash`. */
export async function isActiveAdminKey(db: Queryable, id: string, hash: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `select 1 from api_keys
     where id = $1::text and key_hash = $2::text and role = 'admin' and revoked_at is null`,
    [id, hash],
  );
  return rowCount === 1;
}

/** Every key, or the keys of one app, in id order. */
export async function listApiKeys(db: Queryable, appId: string | null): Promise<ApiKeyRow[]> {
  const { rows } = await db.query<ApiKeyRow>(
    `select ${COLUMNS} from api_keys where $1::text is null or app_id = $1::text order by id`,
    [appId],
  );
  return rows;
}

/** Revokes the key (a revoked one keeps its first revocation time); false when there is none. */
export async function revokeApiKey(db: Queryable, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    "update api_keys set revoked_at = coalesce(revoked_at, now()) where id = $1::text",
    [id],
  );
  return rowCount !== 0;
}
