/** The cheapest statement that proves the database answers (GET /healthz). */
import type { Queryable } from "../pool.ts";

export async function ping(db: Queryable): Promise<void> {
  await db.query("select 1");
}
