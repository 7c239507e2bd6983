/**
 * Endpoints' signing keys, stored sealed (security/secret-box.ts): HMAC secrets (`v1`) and
 * Ed25519 secret keys (`v1a`, with their public key beside them). The rows with expires_at
 * null are the current keys, at most one per scheme; an endpoint that signs both ways has
 * two. Retiring a key (a rotation, or a change of scheme) gives it an expiry (now + grace)
 * so it keeps signing beside its successor until then.
 */
import type { Queryable } from "../pool.ts";

/** Old keys that keep signing beside the current ones, at most (the newest ones). */
const MAX_OLD_SECRETS = 4;

/** A key to store: sealed, with its scheme and (Ed25519) its whpk_ public key. */
export interface NewSecret {
  sealed: string;
  scheme: "v1" | "v1a";
  publicKey: string | null;
}

export interface CurrentSecret {
  /** sealed */
  secret: string;
  scheme: "v1" | "v1a";
  public_key: string | null;
}

export async function insertSecrets(
  db: Queryable,
  endpointId: string,
  secrets: readonly NewSecret[],
): Promise<void> {
  await db.query(
    `insert into endpoint_secrets (endpoint_id, secret, scheme, public_key)
     select $1::text, s.secret, s.scheme, s.public_key
     from unnest($2::text[], $3::text[], $4::text[]) with ordinality as s(secret, scheme, public_key, n)
     order by s.n`,
    [
      endpointId,
      secrets.map((s) => s.sealed),
      secrets.map((s) => s.scheme),
      secrets.map((s) => s.publicKey),
    ],
  );
}

/** The endpoint's current keys (sealed), HMAC first; empty when it has none. */
export async function currentSecrets(db: Queryable, endpointId: string): Promise<CurrentSecret[]> {
  const { rows } = await db.query<CurrentSecret>(
    `select distinct on (scheme) secret, scheme, public_key from endpoint_secrets
     where endpoint_id = $1::text and expires_at is null order by scheme, id desc`,
    [endpointId],
  );
  return rows;
}

/**
 * Makes `added` current keys; the current keys of the schemes in `retire` keep signing for
 * `graceSeconds`. Keys past their expiry, and all but the newest old ones, go. `db` must
 * be a transaction: the endpoint's row lock serializes concurrent changes of one endpoint.
 */
export async function replaceSecrets(
  db: Queryable,
  endpointId: string,
  change: { added: readonly NewSecret[]; retire: readonly string[]; graceSeconds: number },
): Promise<void> {
  await db.query("select 1 from endpoints where id = $1::text for update", [endpointId]);
  await db.query(
    `update endpoint_secrets set expires_at = now() + $2::integer * interval '1 second'
     where endpoint_id = $1::text and expires_at is null and scheme = any ($3::text[])`,
    [endpointId, change.graceSeconds, change.retire],
  );
  await insertSecrets(db, endpointId, change.added);
  await db.query(
    `delete from endpoint_secrets
     where endpoint_id = $1::text and expires_at is not null
       and (expires_at <= now() or id not in (
         select id from endpoint_secrets where endpoint_id = $1::text and expires_at is not null
         order by id desc limit $2::integer))`,
    [endpointId, MAX_OLD_SECRETS],
  );
}

/** A stored key as its re-encryption (security/reencrypt.ts) reads it. */
export interface StoredSecret {
  id: number;
  /** sealed, or plain when it was stored without an encryption key */
  secret: string;
}

/**
 * Every endpoint's keys, current and old, in id order: the `limit` after id `after`
 * (0 for the first page).
 */
export async function secretsAfter(
  db: Queryable,
  after: number,
  limit: number,
): Promise<StoredSecret[]> {
  const { rows } = await db.query<StoredSecret>(
    "select id, secret from endpoint_secrets where id > $1::bigint order by id limit $2::integer",
    [after, limit],
  );
  return rows;
}

/** Stores each key's new value (re-sealed) by id; one statement for all of them. */
export async function rewriteSecrets(db: Queryable, keys: readonly StoredSecret[]): Promise<void> {
  await db.query(
    `update endpoint_secrets s set secret = r.secret
     from unnest($1::bigint[], $2::text[]) as r(id, secret) where s.id = r.id`,
    [keys.map((k) => k.id), keys.map((k) => k.secret)],
  );
}
