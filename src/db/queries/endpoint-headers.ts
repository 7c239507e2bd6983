/**
 * An endpoint's custom headers as stored (endpoints.headers, jsonb): read only by the header
 * routes, which mask the sensitive ones (api/routes/endpoint-headers.ts), and by the claim,
 * which sends them. EndpointRow leaves them out on purpose (endpoints.ts).
 */
import type { Queryable } from "../pool.ts";

/** The endpoint's headers; null when there is no such endpoint. */
export async function endpointHeaders(
  db: Queryable,
  id: string,
): Promise<Record<string, string> | null> {
  const { rows } = await db.query<{ headers: Record<string, string> | null }>(
    "select headers from endpoints where id = $1::text",
    [id],
  );
  return rows[0] ? (rows[0].headers ?? {}) : null;
}

/**
 * The endpoint's headers, its row locked for the rest of the transaction `db` is in (two
 * PATCHes at once merge one after the other, neither losing the other's change); null
 * when there is no such endpoint.
 */
export async function lockEndpointHeaders(
  db: Queryable,
  id: string,
): Promise<Record<string, string> | null> {
  const { rows } = await db.query<{ headers: Record<string, string> | null }>(
    "select headers from endpoints where id = $1::text for update",
    [id],
  );
  return rows[0] ? (rows[0].headers ?? {}) : null;
}
