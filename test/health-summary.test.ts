/**
 * The health summary (GET /health/summary, docs/operations.md): pending, awaiting retry, in flight,
 * dead, delivered and failed in the last hour, the oldest undelivered message and the
 * average delivery time, for the whole queue, per app (by id or uid), for an app with
 * nothing queued, and as an app-scoped key sees it.
 *
 * Rows are seeded straight into the database (test/helpers/seeded-deliveries.ts) with
 * chosen statuses and timestamps, so each figure has an exact expected value. The summary
 * needs a database whose whole content it knows: this file's own.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import {
  ago,
  DAY,
  died,
  HOUR,
  insertSamples,
  MIN,
  newApp,
  newEndpoint,
  seed,
  unique,
  V1,
} from "./helpers/seeded-deliveries.ts";

describe("health summary", () => {
  let h: Harness;
  let A: string;
  let B: string;
  let C: string;
  let aOldest: Date;
  let bOldest: Date;

  beforeAll(async () => {
    h = await startHarness();
    A = await newApp(h, unique("sum-a"));
    B = await newApp(h);
    C = await newApp(h);
    const a1 = (await newEndpoint(h, A)).id;
    const a2 = (await newEndpoint(h, A)).id;
    const b1 = (await newEndpoint(h, B)).id;
    await newEndpoint(h, C);
    aOldest = ago(40 * MIN);
    bOldest = ago(2 * HOUR);
    const future = new Date(Date.now() + DAY);
    await seed(h.db.pool, [
      // app A: 3 pending, 2 awaiting retry, 1 in flight (the oldest of A), 4 dead, 5 delivered, 1 canceled
      { endpointId: a1, status: "pending", createdAt: ago(10 * MIN) },
      { endpointId: a1, status: "pending", createdAt: ago(20 * MIN) },
      { endpointId: a2, status: "pending", createdAt: ago(5 * MIN), nextAttemptAt: future },
      {
        endpointId: a1,
        status: "failed",
        createdAt: ago(15 * MIN),
        code: 500,
        kind: "http",
        nextAttemptAt: future,
      },
      {
        endpointId: a2,
        status: "failed",
        createdAt: ago(25 * MIN),
        code: 503,
        kind: "http",
        nextAttemptAt: future,
      },
      { endpointId: a2, status: "in_flight", createdAt: aOldest },
      died(a1, ago(HOUR), 500),
      died(a1, ago(2 * HOUR), 500),
      died(a1, ago(3 * HOUR), "timeout"),
      died(a2, ago(4 * HOUR), 401),
      ...[1, 2, 3, 4, 5].map((n) => ({
        endpointId: a1,
        status: "delivered" as const,
        createdAt: ago(n * 10 * MIN),
      })),
      { endpointId: a2, status: "canceled", createdAt: ago(3 * HOUR) },
      // app B: 1 pending (the oldest of all), 2 in flight, 1 dead, 2 delivered
      { endpointId: b1, status: "pending", createdAt: bOldest },
      { endpointId: b1, status: "in_flight", createdAt: ago(5 * MIN) },
      { endpointId: b1, status: "in_flight", createdAt: ago(6 * MIN) },
      died(b1, ago(30 * MIN), 429),
      { endpointId: b1, status: "delivered", createdAt: ago(5 * MIN) },
      { endpointId: b1, status: "delivered", createdAt: ago(3 * HOUR) },
    ]);
    // Attempts of the last hour (and older ones that must not count).
    await insertSamples(h.db.pool, a1, [
      { at: ago(10 * MIN), ms: 100, ok: true },
      { at: ago(20 * MIN), ms: 200, ok: true },
      { at: ago(15 * MIN), ms: 5_000, ok: false },
      { at: ago(25 * MIN), ms: 7_000, ok: false },
      { at: ago(90 * MIN), ms: 10_000, ok: true },
      { at: ago(2 * HOUR), ms: 10_000, ok: false },
    ]);
    await insertSamples(h.db.pool, a2, [{ at: ago(30 * MIN), ms: 301, ok: true }]);
    await insertSamples(h.db.pool, b1, [
      { at: ago(5 * MIN), ms: 1_000, ok: true },
      { at: ago(50 * MIN), ms: 3_000, ok: false },
      { at: ago(3 * HOUR), ms: 20_000, ok: true },
    ]);
  });
  afterAll(async () => {
    await h?.close();
  });

  function expectOldest(
    got: { at: string; ageMs: number } | null,
    at: Date,
    before: number,
    after: number,
  ) {
    expect(got).not.toBeNull();
    expect(got!.at).toBe(at.toISOString());
    expect(got!.ageMs).toBeGreaterThanOrEqual(before - at.getTime() - 5);
    expect(got!.ageMs).toBeLessThanOrEqual(after - at.getTime() + 5);
  }

  test("the whole queue", async () => {
    const before = Date.now();
    const res = await h.call("GET", `${V1}/health/summary`);
    const after = Date.now();
    expect(res.status).toBe(200);
    const { oldestPending, ...rest } = res.body;
    expect(rest).toEqual({
      pending: 4,
      awaitingRetry: 2,
      inFlight: 3,
      deadLetter: 5,
      deliveredLastHour: 4,
      failedLastHour: 3,
      // (100 + 200 + 301 + 1000) / 4 = 400.25, rounded to 0.1
      avgDeliveryMsLastHour: 400.3,
    });
    expectOldest(oldestPending, bOldest, before, after);
  });

  test("scoped to one app, by id and by uid", async () => {
    const before = Date.now();
    const byId = await h.call("GET", `${V1}/health/summary?app_id=${A}`);
    const uid = (await h.call("GET", `${V1}/app/${A}`)).body.uid;
    const byUid = await h.call("GET", `${V1}/health/summary?app_id=${uid}`);
    const after = Date.now();
    for (const res of [byId, byUid]) {
      expect(res.status).toBe(200);
      const { oldestPending, ...rest } = res.body;
      expect(rest).toEqual({
        pending: 3,
        awaitingRetry: 2,
        inFlight: 1,
        deadLetter: 4,
        deliveredLastHour: 3,
        failedLastHour: 2,
        // (100 + 200 + 301) / 3 = 200.33
        avgDeliveryMsLastHour: 200.3,
      });
      // in-flight rows are still undelivered: A's oldest is its in-flight one
      expectOldest(oldestPending, aOldest, before, after);
    }

    const b = await h.call("GET", `${V1}/health/summary?app_id=${B}`);
    const { oldestPending, ...rest } = b.body;
    expect(rest).toEqual({
      pending: 1,
      awaitingRetry: 0,
      inFlight: 2,
      deadLetter: 1,
      deliveredLastHour: 1,
      failedLastHour: 1,
      avgDeliveryMsLastHour: 1000,
    });
    expect(oldestPending.at).toBe(bOldest.toISOString());
  });

  test("an app with nothing queued: zeros and nulls", async () => {
    const res = await h.call("GET", `${V1}/health/summary?app_id=${C}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      pending: 0,
      awaitingRetry: 0,
      inFlight: 0,
      deadLetter: 0,
      deliveredLastHour: 0,
      failedLastHour: 0,
      oldestPending: null,
      avgDeliveryMsLastHour: null,
    });
  });

  test("an app-scoped key sees its own app only", async () => {
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: B });
    const auth = { authorization: `Bearer ${key}` };
    const own = await h.call("GET", `${V1}/health/summary`, undefined, auth);
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ pending: 1, inFlight: 2, deadLetter: 1 });
    const other = await h.call("GET", `${V1}/health/summary?app_id=${A}`, undefined, auth);
    expect(other.status).toBe(404);
    const unknown = await h.call("GET", `${V1}/health/summary?app_id=no-such-app`);
    expect(unknown.status).toBe(404);
  });
});
