/** Disables endpoints that answered 410 Gone (one statement per batch, rows locked in id order). */
import type { Queryable } from "../db/pool.ts";

export async function disableGoneEndpoints(db: Queryable, endpointIds: string[]): Promise<number> {
  if (endpointIds.length === 0) return 0;
  // Locking in a fixed order means two workers disabling overlapping sets cannot deadlock.
  const { rowCount } = await db.query(
    `update endpoints e
     set disabled = true, disabled_reason = 'gone', updated_at = now()
     where e.id in (
       select id from endpoints
       where id = any($1::text[]) and not disabled
       order by id
       for no key update
     )`,
    [endpointIds],
  );
  return rowCount ?? 0;
}
