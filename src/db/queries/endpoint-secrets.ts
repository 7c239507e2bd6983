/**
 * Endpoints' signing secrets, stored sealed (security/secret-box.ts). The row with
 * expires_at null is the current secret; a rotation gives the old one an expiry (now +
 * grace) so both sign until then.
 */
import { type Pool, type Queryable, withTransaction } from "../pool.ts";

/** Old secrets that keep signing beside the current one, at most (the newest ones). */
const MAX_OLD_SECRETS = 4;

export async function insertSecret(
  db: Queryable,
  endpointId: string,
  sealedSecret: string,
): Promise<void> {
  await db.query("insert into endpoint_secrets (endpoint_id, secret) values ($1::text, $2::text)", [
    endpointId,
    sealedSecret,
  ]);
}

/** The endpoint's current secret, sealed; null when it has none. */
export async function currentSecret(db: Queryable, endpointId: string): Promise<string | null> {
  const { rows } = await db.query<{ secret: string }>(
    `select secret from endpoint_secrets
     where endpoint_id = $1::text and expires_at is null order by id desc limit 1`,
    [endpointId],
  );
  return rows[0]?.secret ?? null;
}

/**
 * Makes `sealedSecret` the endpoint's current secret; the old current one keeps signing
 * for `graceSeconds`. Secrets past their expiry, and all but the newest old ones, go.
 */
export async function rotateSecret(
  pool: Pool,
  endpointId: string,
  sealedSecret: string,
  graceSeconds: number,
): Promise<void> {
  await withTransaction(pool, async (client) => {
    // the endpoint's row lock serializes concurrent rotations of one endpoint
    await client.query("select 1 from endpoints where id = $1::text for update", [endpointId]);
    await client.query(
      `update endpoint_secrets set expires_at = now() + $2::integer * interval '1 second'
       where endpoint_id = $1::text and expires_at is null`,
      [endpointId, graceSeconds],
    );
    await insertSecret(client, endpointId, sealedSecret);
    await client.query(
      `delete from endpoint_secrets
       where endpoint_id = $1::text and expires_at is not null
         and (expires_at <= now() or id not in (
           select id from endpoint_secrets where endpoint_id = $1::text and expires_at is not null
           order by id desc limit $2::integer))`,
      [endpointId, MAX_OLD_SECRETS],
    );
  });
}
