/**
 * The parts of docs/database.md ("Connection poolers") that need no pooler, on the test
 * database: a heartbeat worker's claims are handed back once its row is stale and never
 * while it beats, exactly once under racing checkers, beside advisory-lock workers; the
 * maintenance lease admits one holder; a pool with prepared statements off, and the
 * library on a caller's client, leave no named statement on a session.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { namedSql } from "../src/db/named-sql.ts";
import { makePool, usePreparedStatements } from "../src/db/pool.ts";
import { HookRelay } from "../src/library.ts";
import { silentLogger } from "../src/logger.ts";
import { leaseLock } from "../src/ops/maintenance-lease.ts";
import { claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { releaseLostClaims } from "../src/queue/release-deliveries.ts";
import { makeHeartbeatLiveness } from "../src/worker/heartbeat-liveness.ts";
import { makeLiveness } from "../src/worker/liveness.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";
import { DEAD_URL, newApp, newEndpoint } from "./helpers/seeded-deliveries.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

async function claimAs(lock: number | null, limit = 10) {
  return claimDeliveries(h.db.pool, {
    workerId: `w-${lock}`,
    workerLock: lock,
    claimToken: randomUUID(),
    limit,
    defaultMaxInFlight: 20,
    defaultTimeoutMs: 60_000,
    leaseMarginMs: 30_000,
  });
}

async function seed(n: number) {
  const appId = await newApp(h);
  await newEndpoint(h, appId, { url: `${DEAD_URL}/hb` });
  for (let i = 0; i < n; i++)
    await enqueueMessage(h.db.pool, { appId, eventType: "t", payload: "{}" }, 5);
}

const STALE_MS = 1_000;
/** A worker's lost-claims check, at `now` (src/db/sql/clock.ts; null: the database's). */
const check = (now: Date | null = null) =>
  releaseLostClaims(h.db.pool, { checkOwners: true, heartbeatStaleMs: STALE_MS, now });

/** The heartbeat row of `lock`: when it was last written, to the millisecond. */
async function beatAt(lock: number | null): Promise<number> {
  const { rows } = await h.db.pool.query(
    "select beat_at from worker_heartbeats where worker_lock = $1",
    [lock],
  );
  return (rows[0].beat_at as Date).getTime();
}

test("a heartbeat worker is never taken over while it beats, and handed back once its row is stale, beside a lock worker", async () => {
  await seed(3);
  const beating = makeHeartbeatLiveness({
    pool: h.db.pool,
    logger: silentLogger,
    staleMs: STALE_MS,
  });
  const locked = makeLiveness({ connectionString: h.db.url, logger: silentLogger });
  await beating.start();
  await locked.start();
  try {
    expect(beating.held).toBe(true);
    expect(await claimAs(beating.lock, 2)).toHaveLength(2);
    expect(await claimAs(locked.lock, 1)).toHaveLength(1);
    // It beats every 200 ms: each beat moves its row on, so a check at a time past the
    // threshold of the beat before finds it alive. Nothing comes back.
    let last = await beatAt(beating.lock);
    for (let i = 0; i < 3; i++) {
      expect(await check()).toBe(0);
      const before = last;
      await waitFor(
        async () => {
          last = await beatAt(beating.lock);
          return last > before;
        },
        5_000,
        "a beat",
      );
      expect(await check(new Date(before + STALE_MS + 1))).toBe(0);
    }
    // The heartbeat stops as a SIGKILL leaves it: no more beats, the row as it was last
    // written (stop() deletes it: a crash does not). Up to the threshold it counts as alive;
    // past it, its claims come back.
    await beating.stop();
    await h.db.pool.query("insert into worker_heartbeats values ($1, 'gone', $2)", [
      beating.lock,
      new Date(last),
    ]);
    expect(await check(new Date(last + STALE_MS - 1))).toBe(0);
    expect(await check(new Date(last + STALE_MS + 1))).toBe(2);
    expect(await check()).toBe(0); // the lock worker's claim stays
    const { rows } = await h.db.pool.query("select worker_lock from claims");
    expect(rows.map((r) => r.worker_lock)).toEqual([locked.lock]);
  } finally {
    await beating.stop();
    await locked.stop();
  }
  // the lock worker gone: its row-less claim comes back by its free lock, as always
  expect(await check()).toBe(1);
});

test("two checkers racing over a stale heartbeat hand each row back once", async () => {
  await h.db.pool.query("delete from claims");
  await seed(6);
  await h.db.pool.query(
    "insert into worker_heartbeats values (424242, 'gone', now() - interval '1 minute') on conflict (worker_lock) do update set beat_at = excluded.beat_at",
  );
  expect(await claimAs(424242, 6)).toHaveLength(6);
  const counts = await Promise.all(Array.from({ length: 4 }, () => check()));
  expect(counts.reduce((a, b) => a + b, 0)).toBe(6);
});

test("the maintenance lease has one holder at a time; it is free again once given up or lapsed", async () => {
  await h.db.pool.query("delete from maintenance_lease");
  const a = leaseLock(h.db.pool, silentLogger, 60_000);
  const b = leaseLock(h.db.pool, silentLogger, 60_000);
  const releaseA = await a.tryTake();
  expect(releaseA).not.toBeNull();
  expect(await b.tryTake()).toBeNull();
  await releaseA!();
  const releaseB = await b.tryTake();
  expect(releaseB).not.toBeNull();
  // B's process dies holding it: the lease lapses and A takes it over
  await h.db.pool.query("update maintenance_lease set expires_at = now() - interval '1 second'");
  const again = await a.tryTake();
  expect(again).not.toBeNull();
  await again!();
});

const PROBE = namedSql<{ n: number }>("select $n::int as n", "hookrelay_pooler_probe");
const prepared = async (db: { query: (q: string) => Promise<{ rows: { n: number }[] }> }) =>
  (await db.query("select count(*)::int as n from pg_prepared_statements")).rows[0]?.n;

test("with prepared statements off a pool's statements are unnamed; on (a direct connection), named", async () => {
  const pool = makePool({ connectionString: h.db.url, max: 1, preparedStatements: false });
  try {
    expect((await pool.query(PROBE.query({ n: 7 }))).rows[0].n).toBe(7);
    expect(await prepared(pool)).toBe(0);
    usePreparedStatements(pool, true);
    await pool.query(PROBE.query({ n: 8 }));
    expect(await prepared(pool)).toBe(1);
  } finally {
    await pool.end();
  }
});

test("the library's send() leaves no prepared statement on the caller's client", async () => {
  const appId = await newApp(h);
  const caller = makePool({ connectionString: h.db.url, max: 1 });
  const relay = new HookRelay({ pool: caller });
  try {
    const client = await caller.connect();
    try {
      await client.query("begin");
      await relay.send(appId, { eventType: "t", payload: { a: 1 } }, { client });
      await client.query("commit");
      expect(await prepared(client)).toBe(0);
    } finally {
      client.release();
    }
    // on the pool it was given (max 1: the same session)
    await relay.send(appId, { eventType: "t", payload: { a: 2 } });
    expect(await prepared(caller)).toBe(0);
  } finally {
    await caller.end();
  }
});
