import { describe, expect, test } from "vitest";
import type { Queryable } from "../db/pool.ts";
import { INTERVAL_MS } from "../domain/partition-interval.ts";
import { CLAIM_AHEAD_MS, ClaimWindow, FLOOR_REFRESH_MS, WIDE } from "./claim-window.ts";

const HOUR = INTERVAL_MS.hour;
const DAY = INTERVAL_MS.day;

/** A database whose delivery_floor holds `floor.ms`, counting the reads. */
function floorDb(floor: { ms: number; reads: number }): Queryable {
  return {
    query: async () => {
      floor.reads++;
      return { rows: [{ ms: String(floor.ms) }] };
    },
  } as unknown as Queryable;
}

describe("the claim's window", () => {
  test("whole periods: from the floor's period to the end of the period holding now + an hour", async () => {
    const now = Date.UTC(2026, 11, 7, 10, 30);
    const floor = { ms: Date.UTC(2026, 11, 5, 17, 45), reads: 0 };
    const daily = await new ClaimWindow(DAY, () => now).bounds(floorDb(floor));
    expect(daily).toEqual({
      loMs: String(Date.UTC(2026, 11, 5)),
      hiMs: String(Date.UTC(2026, 11, 8)),
    });
    const hourly = await new ClaimWindow(HOUR, () => now).bounds(floorDb(floor));
    expect(hourly).toEqual({
      loMs: String(Date.UTC(2026, 11, 5, 17)),
      hiMs: String(Date.UTC(2026, 11, 7, 12)),
    });
    // an hour before midnight the day ahead is in
    const late = Date.UTC(2026, 11, 7, 23, 0) + 1;
    const ahead = await new ClaimWindow(DAY, () => late).bounds(floorDb(floor));
    expect(Number(ahead.hiMs)).toBe(Date.UTC(2026, 11, 9));
    expect(Number(ahead.hiMs)).toBeGreaterThan(late + CLAIM_AHEAD_MS);
  });

  test("a floor of 0 (no maintenance run yet) starts the window at 1: the legacy partition is outside", async () => {
    const bounds = await new ClaimWindow(DAY, () => DAY * 10).bounds(floorDb({ ms: 0, reads: 0 }));
    expect(bounds.loMs).toBe("1");
  });

  test("the floor is read once a minute, not per claim", async () => {
    let now = DAY * 100;
    const floor = { ms: DAY * 99, reads: 0 };
    const window = new ClaimWindow(DAY, () => now);
    await window.bounds(floorDb(floor));
    now += FLOOR_REFRESH_MS - 1;
    await window.bounds(floorDb(floor));
    expect(floor.reads).toBe(1);
    now += 1;
    await window.bounds(floorDb(floor));
    expect(floor.reads).toBe(2);
  });

  test("widened: the floor read again if it is lower, else every period until the next read, then the window again", async () => {
    let now = DAY * 100;
    const floor = { ms: DAY * 99, reads: 0 };
    const db = floorDb(floor);
    const window = new ClaimWindow(DAY, () => now);
    const first = await window.bounds(db);
    expect(first.loMs).toBe(String(DAY * 99));
    // lowered since (a requeue of an older row)
    floor.ms = DAY * 90;
    const lower = await window.widen(db, first);
    expect(lower.loMs).toBe(String(DAY * 90));
    // nothing lower to find: every period, for a minute
    const wide = await window.widen(db, lower);
    expect(wide).toBe(WIDE);
    now += FLOOR_REFRESH_MS - 1;
    expect(await window.bounds(db)).toBe(WIDE);
    now += 1;
    expect((await window.bounds(db)).loMs).toBe(String(DAY * 90));
  });
});
