/**
 * The claim's window of periods (src/queue/claim-window.ts; docs/history.md, "The claim's
 * periods"): its bounds are parameters, so the claim's generic plan, as the worker runs it,
 * starts no scan of a period outside them but the window's check and the dead-letter
 * probes (bounds the statement computed itself opened every period's scans in every
 * search, on every run). A worker's window kept from one claim to the next goes stale: a
 * row queued below it is still claimed in the same call, by a window read again, or, if
 * the floor says nothing new, by every period until the next read of the floor.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { raiseDeliveryFloor } from "../src/ops/delivery-floor.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import { CLAIM_SETTINGS, claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { ClaimWindow, FLOOR_REFRESH_MS, WIDE } from "../src/queue/claim-window.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { captureStatement, explainGeneric } from "./helpers/generic-plan.ts";
import { messageIdAt } from "./helpers/message-ids.ts";

const DAY = 86_400_000;
let db: TestDb;
let serial = 0n;

beforeAll(async () => {
  db = await createTestDb();
  // a month of periods behind today, as a running hookrelay keeps them
  await ensureMessagePartitions(
    db.pool,
    { interval: "day", aheadMs: 32 * DAY },
    40 * DAY,
    Date.now() - 30 * DAY,
  );
  await db.pool.query(
    `insert into applications (id, uid, name) values ('app_cw', 'cw', 'cw');
     insert into endpoints (id, app_id, url) values ('ep_cw', 'app_cw', 'http://127.0.0.1:9/cw')`,
  );
});
afterAll(async () => {
  await db?.drop();
});

/** A due delivery of a message the API made at `ms` (in that day's period); its id. */
async function queueAt(ms: number): Promise<number> {
  serial += 1n;
  const id = messageIdAt(ms, serial);
  await db.pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms)
     values ($1::text, 'app_cw', 't', '{}', hookrelay_message_ms($1::text))`,
    [id],
  );
  const { rows } = await db.pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at, message_ms)
     values ($1::text, 'ep_cw', 'app_cw', 5, now() - interval '1 second', hookrelay_message_ms($1::text))
     returning id`,
    [id],
  );
  return Number(rows[0].id);
}

const options = (window: ClaimWindow) => ({
  workerId: "claim-window",
  workerLock: null,
  claimToken: randomUUID(),
  limit: 100,
  defaultMaxInFlight: 20,
  defaultTimeoutMs: 15_000,
  leaseMarginMs: 5_000,
  window,
});

const dayPartition = (ms: number) =>
  `deliveries_p${new Date(ms).toISOString().slice(0, 10).replaceAll("-", "")}`;

/** Marks every queued delivery done, so each test starts from an empty queue. */
async function clearQueue() {
  await db.pool.query(
    "update deliveries set status = 'delivered', lease_expires_at = null where queued",
  );
}

test("the worker's generic plan of the claim opens a period outside its window only for the window's check and the dead-letter probes", async () => {
  await clearQueue();
  const now = Date.now();
  await queueAt(now);
  await raiseDeliveryFloor(db.pool);
  const window = new ClaimWindow();
  const bounds = await window.bounds(db.pool);
  expect(Number(bounds.loMs)).toBeLessThanOrEqual(now);
  // the statement the worker sends, captured with that window
  const statement = await captureStatement((recorder) =>
    claimDeliveries(recorder, options(window)),
  );
  expect(statement.values).toContain(bounds.loMs);
  const plan = await explainGeneric(db.pool, statement, CLAIM_SETTINGS);
  expect(plan).toMatch(/Subplans Removed: \d+/);
  // (the claim took its row)
  expect(plan.split("\n")[0]).toMatch(/actual rows=1 /);
  const scansOf = (part: string) =>
    plan.split("\n").filter((l) => new RegExp(`Scan .*on ${part} `).test(l));
  // today's period: every search
  expect(scansOf(dayPartition(now)).length).toBeGreaterThan(5);
  // a period ten days back: the check for a queued row outside the window (the due
  // index's first entry) and the two probes for an earlier dead letter of a key (dead
  // letters are not queued: nothing bounds their periods). 16 scans before the window.
  const old = scansOf(dayPartition(now - 10 * DAY));
  expect(old, plan).toHaveLength(3);
  expect(old.filter((l) => l.includes("next_attempt_at_idx"))).toHaveLength(1);
  expect(old.filter((l) => l.includes("ordering_key_id_idx "))).toHaveLength(2);
});

describe("a window kept from claim to claim", () => {
  test("a row queued below it since its floor was read is claimed in the same call, through the floor read again", async () => {
    await clearQueue();
    const now = Date.now();
    const today = await queueAt(now);
    await raiseDeliveryFloor(db.pool);
    const window = new ClaimWindow();
    const before = await window.bounds(db.pool);
    // a requeue of a row five days old lowers the floor to its period
    const old = await queueAt(now - 5 * DAY);
    await raiseDeliveryFloor(db.pool);
    const taken = await claimDeliveries(db.pool, options(window));
    expect(taken.map((d) => Number(d.id)).sort()).toEqual([today, old].sort());
    const after = await window.bounds(db.pool);
    expect(Number(after.loMs)).toBeLessThan(Number(before.loMs));
    expect(after).not.toBe(WIDE);
  });

  test("a row below the floor the floor does not show is claimed in the same call, then every period is read until the floor is read again", async () => {
    await clearQueue();
    let clock = Date.now();
    const window = new ClaimWindow(DAY, () => clock);
    const today = await queueAt(clock);
    await raiseDeliveryFloor(db.pool);
    await window.bounds(db.pool);
    // below the floor, and the floor left where it is (a stale floor)
    const old = await queueAt(clock - 5 * DAY);
    const taken = await claimDeliveries(db.pool, options(window));
    expect(taken.map((d) => Number(d.id)).sort()).toEqual([today, old].sort());
    expect(await window.bounds(db.pool)).toBe(WIDE);
    clock += FLOOR_REFRESH_MS - 1;
    expect(await window.bounds(db.pool)).toBe(WIDE);
    // the floor read again: the window again
    clock += 1;
    const bounds = await window.bounds(db.pool);
    expect(bounds).not.toBe(WIDE);
    expect(Number(bounds.hiMs)).toBeGreaterThan(clock);
  });
});
