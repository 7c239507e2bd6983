/** Waking idle workers from the API: a NOTIFY on the work channel (db/work-channel.ts). */

import type { Queryable } from "../pool.ts";
import { WORK_CHANNEL } from "../work-channel.ts";

/** Tells idle workers there is work; inside a transaction it is sent when that commits. */
export async function notifyWork(db: Queryable): Promise<void> {
  await db.query(`select pg_notify('${WORK_CHANNEL}', '')`);
}
