/** Loads the secrets that currently sign for a set of endpoints (current + those in their grace period). */
import type { Queryable } from "../db/pool.ts";

export async function loadSigningSecrets(
  db: Queryable,
  endpointIds: string[],
): Promise<Map<string, string[]>> {
  const { rows } = await db.query(
    `select endpoint_id, secret
     from endpoint_secrets
     where endpoint_id = any($1::text[]) and (expires_at is null or expires_at > now())
     order by endpoint_id, id desc`,
    [endpointIds],
  );
  const byEndpoint = new Map<string, string[]>();
  for (const row of rows) {
    const list = byEndpoint.get(row.endpoint_id) ?? [];
    list.push(row.secret);
    byEndpoint.set(row.endpoint_id, list);
  }
  return byEndpoint;
}
