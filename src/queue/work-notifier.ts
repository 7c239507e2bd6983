/**
 * Wakes idle workers after messages are committed, coalescing: at most one NOTIFY in flight,
 * and one more after it if anything was enqueued meanwhile.
 *
 * Why not NOTIFY inside each enqueue transaction: PostgreSQL serializes the commits of all
 * transactions that NOTIFY (they take a global lock until the commit record is flushed), so
 * a notification per message limits ingest to one WAL flush at a time (measured here: ~330
 * messages/s through the API). Committing messages without it and sending one NOTIFY for
 * many lets commits share WAL flushes again.
 */
import type { Queryable } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import { WORK_CHANNEL } from "../worker/work-listener.ts";

export interface WorkNotifier {
  /** say that work was committed; the NOTIFY follows shortly */
  poke(): void;
}

export function makeWorkNotifier(db: Queryable, logger?: Logger): WorkNotifier {
  let sending = false;
  let again = false;
  async function send(): Promise<void> {
    sending = true;
    try {
      do {
        again = false;
        await db.query(`select pg_notify('${WORK_CHANNEL}', '')`);
      } while (again);
    } catch (err) {
      // Workers still poll; a lost wake-up costs at most one poll interval.
      logger?.warn({ err }, "could not notify workers");
    } finally {
      sending = false;
    }
  }
  return {
    poke() {
      if (sending) again = true;
      else void send();
    },
  };
}
