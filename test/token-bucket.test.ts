/**
 * An endpoint's per-second token bucket, which the claim statement
 * (src/queue/claim-deliveries.ts) keeps in endpoint_health: claims made at chosen times
 * (their `now`, src/db/sql/clock.ts) by three "workers" at once (three connections
 * claiming concurrently, as three processes do) take together exactly the burst plus the
 * rate times the time gone by, never more and never fewer while rows wait; a quiet spell
 * refills only up to the burst; an unlimited endpoint in the same claims takes all it has
 * room for. No test waits for real time: the throughput of real worker processes under a
 * limit is the benchmark's to measure.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const V1 = "/api/v1";
const RATE = 10;
const WORKERS = 3;

// Its own database, and no worker: only the test claims.
let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

/** An app with a limited endpoint (10/s) and an unlimited one, `n` messages to each. */
async function endpoints(n: number) {
  const app = await h.call("POST", `${V1}/app`, { name: `bucket-${randomUUID().slice(0, 8)}` });
  expect(app.status).toBe(201);
  const make = async (policy: Record<string, unknown>) => {
    const ep = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
      url: "http://127.0.0.1:9/never",
      // room for everything at once: only the bucket limits
      maxInFlight: 10_000,
      ...policy,
    });
    expect(ep.status, JSON.stringify(ep.body)).toBe(201);
    return ep.body.id as string;
  };
  const limited = await make({ ratePerSecond: RATE });
  const unlimited = await make({});
  for (let i = 0; i < n; i++)
    await enqueueMessage(h.db.pool, { appId: app.body.id, eventType: "b", payload: "{}" }, 5);
  return { limited, unlimited };
}

/** WORKERS claims at once, all at `now`; how many rows of each endpoint they took. */
async function claimTogether(now: Date, endpointIds: string[]): Promise<number[]> {
  const rounds = await Promise.all(
    Array.from({ length: WORKERS }, (_, w) =>
      claimDeliveries(h.db.pool, {
        workerId: `w${w}`,
        workerLock: null,
        claimToken: randomUUID(),
        limit: 10_000,
        defaultMaxInFlight: 20,
        defaultTimeoutMs: 60_000,
        leaseMarginMs: 60_000,
        now,
      }),
    ),
  );
  const rows = rounds.flat();
  return endpointIds.map((id) => rows.filter((r) => r.endpointId === id).length);
}

/** A deterministic PRNG (mulberry32), so a failure can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test("concurrent claims take the burst, then the rate times the time gone by, and no more; an unlimited endpoint takes all it has", async () => {
  const { limited, unlimited } = await endpoints(300);
  // a second ahead of the rows: all of them are due
  const t0 = Date.now() + 1_000;
  const at = (ms: number) => new Date(t0 + ms);

  // the burst (one second's worth), and everything the unlimited endpoint has
  expect(await claimTogether(at(0), [limited, unlimited])).toEqual([RATE, 300]);
  // at the same instant: nothing more
  expect(await claimTogether(at(0), [limited])).toEqual([0]);
  // 100 ms later: one token
  expect(await claimTogether(at(100), [limited])).toEqual([1]);
  // 50 ms: half a token, kept for later
  expect(await claimTogether(at(150), [limited])).toEqual([0]);
  expect(await claimTogether(at(200), [limited])).toEqual([1]);
  // a long quiet spell refills up to the burst, not beyond
  expect(await claimTogether(at(60_000), [limited])).toEqual([RATE]);
  expect(await claimTogether(at(60_000), [limited])).toEqual([0]);
});

test("over any run of claims at random moments, what three workers took together is the burst plus the rate times the time gone by", async () => {
  const { limited } = await endpoints(120);
  const t0 = Date.now() + 1_000;
  const random = prng(20_261_206);
  let elapsedMs = 0;
  let taken = (await claimTogether(new Date(t0), [limited]))[0]!;
  expect(taken).toBe(RATE);
  const history: string[] = [];
  while (elapsedMs < 8_000) {
    // under a second between looks: the bucket never fills to its cap in between
    elapsedMs += 1 + Math.floor(random() * 700);
    taken += (await claimTogether(new Date(t0 + elapsedMs), [limited]))[0]!;
    history.push(`${elapsedMs} ms: ${taken}`);
    // (the bucket is float8 in SQL: a whole number of tokens may come out a hair under)
    const due = RATE + (RATE * elapsedMs) / 1000;
    expect(taken, history.join("; ")).toBeLessThanOrEqual(Math.floor(due + 1e-9));
    expect(taken, history.join("; ")).toBeGreaterThanOrEqual(Math.floor(due - 1e-9));
  }
});
