/**
 * Latency and success telemetry: percentiles against a reference computation on known
 * samples, the rolling window, the purge, slow / very slow detection, the lowered failure
 * threshold of very slow endpoints, and the endpoint-health resource and list.
 *
 * Samples are written straight into latency_samples (with chosen timestamps) where exact
 * figures are needed; an in-process worker delivers where real attempts are needed.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  endpointLatency,
  purgeLatencySamples,
  refreshLatencyStats,
} from "../src/health/latency-stats.ts";
import { claimableAt } from "./helpers/claimable.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, type Reply, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const HOUR_S = 3600;

let h: Harness;
let rx: Receiver;
const replies = new Map<string, Reply>();

beforeAll(async () => {
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver((req) => replies.get(req.path) ?? { status: 200 });
  h.startWorker();
});

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

// ---------------------------------------------------------------- helpers

let seq = 0;

async function makeApp(): Promise<string> {
  const app = await h.call("POST", `${V1}/app`, { name: `lat-${++seq}` });
  expect(app.status).toBe(201);
  return app.body.id;
}

async function makeEndpoint(appId: string, name: string, policy: Record<string, unknown> = {}) {
  const ep = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: `${rx.url}/${name}`,
    ...policy,
  });
  expect(ep.status, JSON.stringify(ep.body)).toBe(201);
  return { appId, endpointId: ep.body.id as string, path: `/${name}` };
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

function shuffle<T>(items: T[], random: () => number): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

interface Sample {
  /** seconds before now() */
  ageS: number;
  latencyMs: number;
  ok: boolean;
}

async function insertSamples(endpointId: string, samples: Sample[]): Promise<void> {
  await h.db.pool.query(
    `insert into latency_samples (endpoint_id, at, latency_ms, ok)
     select $1, now() - age * interval '1 second', ms, ok
     from unnest($2::float8[], $3::int[], $4::bool[]) as s(age, ms, ok)`,
    [
      endpointId,
      samples.map((s) => s.ageS),
      samples.map((s) => s.latencyMs),
      samples.map((s) => s.ok),
    ],
  );
}

/** Nearest rank: the smallest value with at least a fraction p of the samples at or below it. */
function nearestRank(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  for (let i = 0; i < sorted.length; i++) {
    if (sorted.filter((v) => v <= sorted[i]!).length / sorted.length >= p) return sorted[i]!;
  }
  return sorted.at(-1)!;
}

function reference(samples: { latencyMs: number; ok: boolean }[]) {
  const values = samples.map((s) => s.latencyMs);
  return {
    p50Ms: nearestRank(values, 0.5),
    p95Ms: nearestRank(values, 0.95),
    p99Ms: nearestRank(values, 0.99),
    samples: samples.length,
    successRate: samples.length === 0 ? null : samples.filter((s) => s.ok).length / samples.length,
  };
}

/** `count` samples inside the window (up to 23 h old) with latencies from `latency`. */
function recentSamples(
  count: number,
  random: () => number,
  latency: (i: number) => number,
  okEvery = 4,
): Sample[] {
  return shuffle(
    Array.from({ length: count }, (_, i) => ({
      ageS: random() * 23 * HOUR_S,
      latencyMs: latency(i),
      ok: i % okEvery !== 0,
    })),
    random,
  );
}

/** Samples older than the 24 h window (25 to 48 h old). */
function oldSamples(count: number, random: () => number, latencyMs: number): Sample[] {
  return Array.from({ length: count }, () => ({
    ageS: (25 + random() * 23) * HOUR_S,
    latencyMs,
    ok: false,
  }));
}

async function healthRow(endpointId: string) {
  const { rows } = await h.db.pool.query(
    `select circuit_state, consecutive_failures, p50_ms, p95_ms, p99_ms, samples, success_rate,
            slow, very_slow, stats_at
     from endpoint_health where endpoint_id = $1`,
    [endpointId],
  );
  return rows[0];
}

const WINDOW = () => h.config.health.windowMs;

// ---------------------------------------------------------------- percentiles and window

describe("percentiles over the rolling window", () => {
  const random = prng(20240601);
  let appId: string;
  const sets: { endpointId: string; recent: Sample[]; old: Sample[] }[] = [];

  beforeAll(async () => {
    appId = await makeApp();
    // A skewed distribution with duplicates: mostly fast, a long tail.
    const skewed = (i: number) => Math.round(5 + 3000 * (i / 1000) ** 6 + (i % 7));
    const specs = [
      { recent: recentSamples(1_000, random, skewed), old: oldSamples(300, random, 99_999) },
      {
        recent: recentSamples(37, random, (i) => 100 + ((i * 7919) % 53)),
        old: oldSamples(10, random, 1),
      },
      { recent: recentSamples(20, random, (i) => 10 * (20 - i)), old: [] },
      { recent: recentSamples(1, random, () => 42, 2), old: oldSamples(5, random, 7_000) },
      { recent: [], old: oldSamples(30, random, 9_000) },
    ];
    for (const [i, spec] of specs.entries()) {
      const { endpointId } = await makeEndpoint(appId, `pct-${i}`);
      await insertSamples(endpointId, shuffle([...spec.recent, ...spec.old], random));
      sets.push({ endpointId, ...spec });
    }
  });

  test("endpointLatency matches a nearest-rank reference and ignores samples older than the window", async () => {
    for (const [i, set] of sets.entries()) {
      const got = await endpointLatency(h.db.pool, set.endpointId, WINDOW());
      const want = reference(set.recent);
      expect({ ...got, successRate: null }, `set ${i}`).toEqual({ ...want, successRate: null });
      if (want.successRate === null) expect(got.successRate).toBeNull();
      else expect(got.successRate).toBeCloseTo(want.successRate, 12);
      // Counting the old samples would have moved the figures (so the window matters here).
      if (set.old.length > 0 && set.recent.length > 0) {
        const { p50Ms, p95Ms, p99Ms } = reference([...set.recent, ...set.old]);
        expect([p50Ms, p95Ms, p99Ms], `set ${i} with old samples`).not.toEqual([
          want.p50Ms,
          want.p95Ms,
          want.p99Ms,
        ]);
      }
    }
    const big = await endpointLatency(h.db.pool, sets[0]!.endpointId, WINDOW());
    console.log(
      `1,000 samples: p50 ${big.p50Ms} ms, p95 ${big.p95Ms} ms, p99 ${big.p99Ms} ms, success ${big.successRate}`,
    );
    // A narrower window sees fewer samples: the window really is applied by time.
    const narrow = await endpointLatency(h.db.pool, sets[0]!.endpointId, 6 * HOUR_S * 1000);
    const within = (ageS: number) => sets[0]!.recent.filter((s) => s.ageS < ageS).length;
    expect(narrow.samples).toBeGreaterThanOrEqual(within(6 * HOUR_S - 60));
    expect(narrow.samples).toBeLessThanOrEqual(within(6 * HOUR_S + 60));
    expect(narrow.samples).toBeLessThan(500);
  });

  test("refreshLatencyStats stores the same figures as computed on demand", async () => {
    await refreshLatencyStats(h.db.pool, h.config.health);
    for (const set of sets) {
      const row = await healthRow(set.endpointId);
      const want = reference(set.recent);
      expect(row).toMatchObject({
        p50_ms: want.p50Ms,
        p95_ms: want.p95Ms,
        p99_ms: want.p99Ms,
        samples: want.samples,
      });
      if (want.successRate === null) expect(row.success_rate).toBeNull();
      else expect(row.success_rate).toBeCloseTo(want.successRate, 12);
      expect(row.stats_at).toBeInstanceOf(Date);
    }
    // Only old samples: nothing in the window, not slow although they were 9 s each.
    expect(await healthRow(sets[4]!.endpointId)).toMatchObject({
      samples: 0,
      p95_ms: null,
      slow: false,
      very_slow: false,
    });
  });

  test("purgeLatencySamples deletes exactly the samples older than the window", async () => {
    const count = async (onlyOld: boolean) =>
      (
        await h.db.pool.query(
          `select count(*)::int as n from latency_samples
           where not $1::boolean or at < now() - $2::bigint * interval '1 millisecond'`,
          [onlyOld, WINDOW()],
        )
      ).rows[0].n as number;
    const oldBefore = await count(true);
    const totalBefore = await count(false);
    const insertedOld = sets.reduce((n, s) => n + s.old.length, 0);
    expect(oldBefore).toBe(insertedOld);

    // A small batch size exercises the batching loop.
    const deleted = await purgeLatencySamples(h.db.pool, WINDOW(), 7);
    expect(deleted).toBe(oldBefore);
    expect(await count(true)).toBe(0);
    expect(await count(false)).toBe(totalBefore - oldBefore);
    for (const set of sets) {
      const { rows } = await h.db.pool.query(
        "select count(*)::int as n from latency_samples where endpoint_id = $1",
        [set.endpointId],
      );
      expect(rows[0].n).toBe(set.recent.length);
      // Purging changes nothing inside the window.
      expect((await endpointLatency(h.db.pool, set.endpointId, WINDOW())).samples).toBe(
        set.recent.length,
      );
    }
    expect(await purgeLatencySamples(h.db.pool, WINDOW())).toBe(0);
  });
});

// ---------------------------------------------------------------- slow endpoints

test("slow: p95 above 2 s with at least 20 samples; very slow above 5 s; never with fewer than 20", async () => {
  const appId = await makeApp();
  const random = prng(7);
  // 20 samples: 18 fast + 2 at the given latency → p95 (19th of 20) is the slow value.
  const withP95 = (p95: number, n = 20) =>
    recentSamples(n, random, (i) => (i < n - 2 ? 50 : p95), 1_000);
  const cases = [
    { name: "slow", samples: withP95(3_000), slow: true, verySlow: false },
    { name: "very-slow", samples: withP95(6_000), slow: true, verySlow: true },
    { name: "boundary", samples: withP95(2_000), slow: false, verySlow: false },
    { name: "boundary-very", samples: withP95(5_000), slow: true, verySlow: false },
    {
      name: "too-few",
      samples: recentSamples(19, random, () => 9_000),
      slow: false,
      verySlow: false,
    },
    {
      name: "fast",
      samples: recentSamples(500, random, (i) => i % 300),
      slow: false,
      verySlow: false,
    },
  ];
  const ids: string[] = [];
  for (const c of cases) {
    const { endpointId } = await makeEndpoint(appId, `slow-${c.name}`);
    await insertSamples(endpointId, c.samples);
    ids.push(endpointId);
  }
  await refreshLatencyStats(h.db.pool, h.config.health);
  for (const [i, c] of cases.entries()) {
    const row = await healthRow(ids[i]!);
    expect({ name: c.name, slow: row.slow, verySlow: row.very_slow }).toEqual({
      name: c.name,
      slow: c.slow,
      verySlow: c.verySlow,
    });
    expect(row.p95_ms).toBe(reference(c.samples).p95Ms);
    // The resource computes the same flags on demand.
    const res = await h.call("GET", `${V1}/app/${appId}/endpoint/${ids[i]}/health`);
    expect(res.status).toBe(200);
    expect({ slow: res.body.slow, verySlow: res.body.verySlow }, c.name).toEqual({
      slow: c.slow,
      verySlow: c.verySlow,
    });
  }

  // The list filters on the stored flag.
  const list = await h.call("GET", `${V1}/health/endpoints?slow=true&app_id=${appId}`);
  expect(list.status, JSON.stringify(list.body)).toBe(200);
  expect(list.body.data.map((e: { endpointId: string }) => e.endpointId).sort()).toEqual(
    [ids[0], ids[1], ids[3]].sort(),
  );
  expect(list.body.data.every((e: { slow: boolean }) => e.slow)).toBe(true);
  const notSlow = await h.call("GET", `${V1}/health/endpoints?slow=false&app_id=${appId}`);
  expect(notSlow.body.data.map((e: { endpointId: string }) => e.endpointId).sort()).toEqual(
    [ids[2], ids[4], ids[5]].sort(),
  );

  // Once the slow samples fall out of the window and the stats are refreshed, the flags clear.
  await h.db.pool.query(
    "update latency_samples set at = now() - interval '25 hours' where endpoint_id = any($1::text[])",
    [ids],
  );
  await refreshLatencyStats(h.db.pool, h.config.health);
  for (const id of ids)
    expect(await healthRow(id)).toMatchObject({ slow: false, very_slow: false, samples: 0 });
});

test("a very slow endpoint opens after 3 consecutive failures although its threshold is 10", async () => {
  const appId = await makeApp();
  const policy = { failureThreshold: 10, maxInFlight: 1, maxAttempts: 100 };
  const verySlow = await makeEndpoint(appId, "lowered-very-slow", policy);
  const onlySlow = await makeEndpoint(appId, "lowered-only-slow", policy);
  const random = prng(99);
  await insertSamples(
    verySlow.endpointId,
    recentSamples(20, random, () => 6_000),
  );
  await insertSamples(
    onlySlow.endpointId,
    recentSamples(20, random, () => 3_000),
  );
  await refreshLatencyStats(h.db.pool, h.config.health);
  expect(await healthRow(verySlow.endpointId)).toMatchObject({ slow: true, very_slow: true });
  expect(await healthRow(onlySlow.endpointId)).toMatchObject({ slow: true, very_slow: false });

  replies.set(verySlow.path, { status: 500 });
  replies.set(onlySlow.path, { status: 500 });
  // One message each, one request at a time: the failures come one by one.
  const msg = await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "x", payload: {} });
  expect(msg.status).toBe(202);

  await waitFor(
    async () => (await healthRow(verySlow.endpointId)).circuit_state === "open",
    15_000,
    "very slow to open",
  );
  const { rows: vEvents } = await h.db.pool.query(
    "select from_state, to_state, reason from circuit_events where endpoint_id = $1",
    [verySlow.endpointId],
  );
  expect(vEvents).toEqual([
    {
      from_state: "closed",
      to_state: "open",
      reason: "3 consecutive failed attempts (threshold 3)",
    },
  ]);
  expect((await healthRow(verySlow.endpointId)).consecutive_failures).toBe(3);
  const health = await h.call("GET", `${V1}/app/${appId}/endpoint/${verySlow.endpointId}/health`);
  expect(health.body.circuit).toMatchObject({
    state: "open",
    failureThreshold: 10,
    effectiveFailureThreshold: 3,
  });

  // Merely slow keeps the endpoint's own threshold of 10.
  await waitFor(
    async () => (await healthRow(onlySlow.endpointId)).circuit_state === "open",
    15_000,
    "slow to open",
  );
  const { rows: sEvents } = await h.db.pool.query(
    "select reason from circuit_events where endpoint_id = $1",
    [onlySlow.endpointId],
  );
  expect(sEvents).toEqual([{ reason: "10 consecutive failed attempts (threshold 10)" }]);
  expect(rx.on(verySlow.path)).toHaveLength(3);
  expect(rx.on(onlySlow.path)).toHaveLength(10);
});

// ---------------------------------------------------------------- the health resource

test("the health resource shows state, history, counts, percentiles and last outcomes; the list filters by state", async () => {
  const appId = await makeApp();
  const ep = await makeEndpoint(appId, "resource", { failureThreshold: 2, maxAttempts: 1 });
  const healthy = await makeEndpoint(appId, "resource-healthy");
  const msg = async () =>
    expect(
      (await h.call("POST", `${V1}/app/${appId}/msg`, { eventType: "r", payload: {} })).status,
    ).toBe(202);
  const statuses = async (endpointId: string) =>
    (
      await h.db.pool.query("select status from deliveries where endpoint_id = $1 order by id", [
        endpointId,
      ])
    ).rows.map((r) => r.status);

  // One success, then two failures (each a dead letter: one attempt allowed) open the circuit.
  await msg();
  await waitFor(
    async () => (await statuses(ep.endpointId)).join() === "delivered",
    10_000,
    "the first delivery",
  );
  replies.set(ep.path, { status: 500 });
  await msg();
  await msg();
  await waitFor(
    async () => (await healthRow(ep.endpointId)).circuit_state === "open",
    10_000,
    "the circuit to open",
  );
  await waitFor(
    async () => (await statuses(healthy.endpointId)).every((s) => s === "delivered"),
    10_000,
    "healthy",
  );
  // Three more wait behind the open circuit: a claim now takes none of them.
  await msg();
  await msg();
  await msg();
  expect(await claimableAt(h, ep.endpointId)).toEqual([]);

  expect(await statuses(ep.endpointId)).toEqual([
    "delivered",
    "dead_letter",
    "dead_letter",
    "pending",
    "pending",
    "pending",
  ]);
  const asked = Date.now();
  const res = await h.call("GET", `${V1}/app/${appId}/endpoint/${ep.endpointId}/health`);
  const answered = Date.now();
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const b = res.body;
  console.log(`health resource: ${JSON.stringify(b)}`);
  expect(b).toMatchObject({
    endpointId: ep.endpointId,
    appId,
    url: `${rx.url}/resource`,
    disabled: false,
  });
  expect(b.circuit).toMatchObject({
    state: "open",
    consecutiveFailures: 2,
    failureThreshold: 2,
    effectiveFailureThreshold: 2,
    cooldownMs: 300_000,
    baseCooldownMs: 300_000,
  });
  expect(Date.parse(b.circuit.openUntil) - Date.parse(b.circuit.openedAt)).toBe(300_000);
  expect(b.circuit.history).toEqual([
    {
      at: expect.any(String),
      from: "closed",
      to: "open",
      reason: "2 consecutive failed attempts (threshold 2)",
    },
  ]);

  const { rows: samples } = await h.db.pool.query(
    "select latency_ms, ok from latency_samples where endpoint_id = $1",
    [ep.endpointId],
  );
  expect(samples).toHaveLength(3);
  const want = reference(samples.map((s) => ({ latencyMs: s.latency_ms, ok: s.ok })));
  expect(b.latency).toMatchObject({
    p50Ms: want.p50Ms,
    p95Ms: want.p95Ms,
    p99Ms: want.p99Ms,
    samples: 3,
    windowMs: 24 * 3_600_000,
  });
  expect(b.latency.successRate).toBeCloseTo(1 / 3, 12);
  expect(b.slow).toBe(false);
  expect(b.verySlow).toBe(false);

  expect(b.queue).toMatchObject({ pending: 3, inFlight: 0, deadLetter: 2 });
  // the oldest of the three waits since it was stored; its age is from then to the answer
  const { rows: waiting } = await h.db.pool.query(
    "select min(created_at) as at from deliveries where endpoint_id = $1 and status = 'pending'",
    [ep.endpointId],
  );
  const oldest = (waiting[0].at as Date).getTime();
  expect(Date.parse(b.queue.oldestPendingAt)).toBe(oldest);
  expect(b.queue.oldestPendingAgeMs).toBeGreaterThanOrEqual(asked - oldest);
  expect(b.queue.oldestPendingAgeMs).toBeLessThanOrEqual(answered - oldest);

  expect(b.pausedUntil).toBeNull();
  const lastOk = Date.parse(b.lastSuccessAt);
  const lastFail = Date.parse(b.lastFailureAt);
  expect(lastFail).toBeGreaterThan(lastOk);
  expect(lastFail).toBeLessThan(oldest);
  const { rows: attempts } = await h.db.pool.query(
    `select max(started_at) filter (where outcome = 'success') as ok, max(started_at) filter (where outcome = 'failure') as fail
     from attempts where endpoint_id = $1`,
    [ep.endpointId],
  );
  expect(lastOk).toBe(attempts[0].ok.getTime());
  expect(lastFail).toBe(attempts[0].fail.getTime());
  expect(b.limits).toMatchObject({
    maxInFlight: 20,
    ratePerSecond: null,
    ratePerMinute: null,
    ratePerHour: null,
  });

  // The list: state=open finds this endpoint and not its healthy sibling.
  const open = await h.call("GET", `${V1}/health/endpoints?state=open&app_id=${appId}`);
  expect(open.status, JSON.stringify(open.body)).toBe(200);
  expect(open.body.data.map((e: { endpointId: string }) => e.endpointId)).toEqual([ep.endpointId]);
  expect(open.body.data[0]).toMatchObject({
    circuit: { state: "open", consecutiveFailures: 2 },
    queue: { pending: 3, deadLetter: 2 },
  });
  const closed = await h.call("GET", `${V1}/health/endpoints?state=closed&app_id=${appId}`);
  expect(closed.body.data.map((e: { endpointId: string }) => e.endpointId)).toEqual([
    healthy.endpointId,
  ]);
  const all = await h.call("GET", `${V1}/health/endpoints?state=open`);
  expect(all.body.data.length).toBeGreaterThanOrEqual(1);
  expect(
    all.body.data.every((e: { circuit: { state: string } }) => e.circuit.state === "open"),
  ).toBe(true);
  expect((await h.call("GET", `${V1}/health/endpoints?state=sideways`)).status).toBe(422);
});
