/** Delivery counts of one endpoint by status, for Svix's endpoint stats (routes/endpoint-stats.ts). */
import type { Queryable } from "../pool.ts";

/**
 * The endpoint's deliveries by status, those created in [since, until) (either bound may
 * be null: open). One row per status present. The (endpoint_id, message_id) index finds the
 * endpoint's rows; the window is checked on each.
 */
export async function deliveryCountsByStatus(
  db: Queryable,
  endpointId: string,
  since: Date | null,
  until: Date | null,
): Promise<Map<string, number>> {
  const { rows } = await db.query<{ status: string; n: number }>(
    `select status, count(*)::int as n from deliveries
     where endpoint_id = $1::text
       and ($2::timestamptz is null or created_at >= $2::timestamptz)
       and ($3::timestamptz is null or created_at < $3::timestamptz)
     group by status`,
    [endpointId, since, until],
  );
  return new Map(rows.map((r) => [r.status, r.n]));
}
