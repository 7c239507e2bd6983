/**
 * The claim's window of periods (docs/history.md, "The claim's periods"): the message_ms
 * range [lo, hi) its searches read, given to the claim as parameters so PostgreSQL leaves
 * out every other period of deliveries when the claim's plan starts, before it opens
 * anything. Bounds the statement computed itself were known only as it ran: every period's
 * index scans were opened (and their locks taken) on every claim, and most of them never
 * read (docs/performance.md, "Claims over a month of periods").
 *
 * - lo: the floor (delivery_floor, db/sql/delivery-floor.ts) as last read, rounded down to
 *   its period, and at least 1 (the legacy partition left out). Read again every
 *   FLOOR_REFRESH_MS (maintenance raises it once a minute; a window whose floor is below
 *   the true one only reads a period or two more), and whenever a claim found a queued row
 *   outside the window.
 * - hi: the end of the period that holds this process's clock plus CLAIM_AHEAD_MS.
 *
 * The claim checks in its own snapshot that no queued row lies outside the window; if one
 * does, it takes nothing and says so (claim-deliveries.ts), and its caller asks for a
 * wider window: the floor read again, then every message_ms (WIDE) until the next refresh.
 * So a row outside costs a claim or two and the pruning for a while, never its turn nor
 * its key's order.
 */
import type { Queryable } from "../db/pool.ts";
import { deliveryFloorMs } from "../db/queries/queue-bounds.ts";
import { INTERVAL_MS } from "../domain/partition-interval.ts";

/**
 * How far ahead of the claiming process's clock a message's own time (message_ms, from the
 * id the API process made with its clock) may be for the claim's window to hold it: an
 * hour (docs/history.md, "The claim's periods").
 */
export const CLAIM_AHEAD_MS = 3_600_000;

/** How long a floor read is used before it is read again. */
export const FLOOR_REFRESH_MS = 60_000;

/** A window of message_ms, as the claim's bigint parameters (decimal text). */
export interface ClaimBounds {
  loMs: string;
  hiMs: string;
}

/** Every message_ms: the claim reads every period. */
export const WIDE: ClaimBounds = {
  loMs: "-9223372036854775808",
  hiMs: "9223372036854775807",
};

export class ClaimWindow {
  #floorMs: number | null = null;
  #readAt = 0;
  #wideUntil = 0;

  /**
   * @param periodMs the length of a period (HOOKRELAY_PARTITION_INTERVAL); the window holds
   *   whole periods. A day's bounds are an hour's too.
   * @param clock this process's clock (ms since the epoch)
   */
  constructor(
    private readonly periodMs: number = INTERVAL_MS.day,
    private readonly clock: () => number = Date.now,
  ) {}

  /** The window for the next claim; reads the floor first when it is due. */
  async bounds(db: Queryable): Promise<ClaimBounds> {
    const now = this.clock();
    if (now < this.#wideUntil) return WIDE;
    if (this.#floorMs === null || now - this.#readAt >= FLOOR_REFRESH_MS) await this.#readFloor(db);
    const p = this.periodMs;
    const lo = Math.max(1, Math.floor(this.#floorMs! / p) * p);
    const hi = (Math.floor((now + CLAIM_AHEAD_MS) / p) + 1) * p;
    return { loMs: String(lo), hiMs: String(hi) };
  }

  /**
   * A claim found a queued row outside `tried`: the window for the next try. The floor read
   * again, if it is now lower; else every message_ms until the next floor refresh.
   */
  async widen(db: Queryable, tried: ClaimBounds): Promise<ClaimBounds> {
    if (tried !== WIDE) {
      const before = this.#floorMs;
      await this.#readFloor(db);
      if (before !== null && this.#floorMs! < before) return this.bounds(db);
    }
    this.#wideUntil = this.clock() + FLOOR_REFRESH_MS;
    return WIDE;
  }

  async #readFloor(db: Queryable): Promise<void> {
    // (none read: the floor as it was)
    this.#floorMs = (await deliveryFloorMs(db)) ?? this.#floorMs ?? 0;
    this.#readAt = this.clock();
  }
}

/** Whether `alias`'s row lies in the claim's window: a condition on its partition key. */
export const inWindowSql = (alias: string) =>
  `${alias}.message_ms >= $loMs::bigint and ${alias}.message_ms < $hiMs::bigint`;
