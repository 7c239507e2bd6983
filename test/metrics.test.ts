/**
 * /metrics: the Prometheus text output, parsed line by line here (no client library), and
 * checked against seeded queue state, against results fed to makeMetrics(), and against
 * real deliveries made by a full runtime (startRuntime: API on an ephemeral port, worker,
 * maintenance) on its own test database; and a worker-only runtime's own /metrics port.
 */
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { silentLogger } from "../src/logger.ts";
import { makeMetrics } from "../src/ops/metrics.ts";
import type { DeliveryResult } from "../src/queue/record-results.ts";
import { type Runtime, startRuntime } from "../src/runtime.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import {
  buildTestApi,
  type CallResult,
  type Harness,
  startHarness,
  testConfig,
} from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const DEAD_URL = "http://127.0.0.1:9";

// ------------------------------------------------------------- Prometheus text format

interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Exposition {
  samples: PromSample[];
  types: Map<string, string>;
  help: Map<string, string>;
}

function parseValue(raw: string): number {
  if (raw === "+Inf") return Number.POSITIVE_INFINITY;
  if (raw === "-Inf") return Number.NEGATIVE_INFINITY;
  // (prom-client writes "Nan"; Prometheus reads NaN in any case)
  if (raw.toLowerCase() === "nan") return Number.NaN;
  const n = Number(raw);
  if (Number.isNaN(n)) throw new Error(`not a sample value: ${raw}`);
  return n;
}

const unescapeLabel = (v: string) =>
  v.replace(/\\(["\\n])/g, (_, c: string) => (c === "n" ? "\n" : c));

/** Parses the Prometheus text exposition format (version 0.0.4), one line at a time. */
function parseProm(text: string): Exposition {
  const out: Exposition = { samples: [], types: new Map(), help: new Map() };
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line);
      if (m) (m[1] === "TYPE" ? out.types : out.help).set(m[2]!, m[3]!);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: -?\d+)?$/.exec(line);
    if (!m) throw new Error(`unparsable metrics line: ${JSON.stringify(line)}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? "";
    const labelRe = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/gy;
    let consumed = 0;
    for (let l = labelRe.exec(body); l; l = labelRe.exec(body)) {
      labels[l[1]!] = unescapeLabel(l[2]!);
      consumed = labelRe.lastIndex;
    }
    if (consumed !== body.length) throw new Error(`unparsable labels: ${JSON.stringify(line)}`);
    out.samples.push({ name: m[1]!, labels, value: parseValue(m[3]!) });
  }
  return out;
}

/** The one sample of `name` whose labels include `labels`; undefined if none. */
function sample(
  e: Exposition,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const hits = e.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (hits.length > 1)
    throw new Error(`${name} ${JSON.stringify(labels)} matches ${hits.length} samples`);
  return hits[0]?.value;
}

/** Every distinct value of one label among the samples of `name`. */
const labelValues = (e: Exposition, name: string, label: string) =>
  [...new Set(e.samples.filter((s) => s.name === name).map((s) => s.labels[label]))].sort();

/** Histogram buckets of one series: [le, cumulative count], in order. */
function buckets(e: Exposition, name: string, labels: Record<string, string>): [number, number][] {
  return e.samples
    .filter(
      (s) =>
        s.name === `${name}_bucket` && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    )
    .map((s) => [parseValue(s.labels.le!), s.value] as [number, number])
    .sort((a, b) => a[0] - b[0]);
}

test("the parser reads the format's corners", () => {
  const e = parseProm(
    [
      "# HELP x_total A counter.",
      "# TYPE x_total counter",
      'x_total{a="1",b="with \\"quote\\" and \\\\ and \\n"} 3',
      "x_total 4 1712345678000",
      'h_bucket{le="+Inf"} 2',
      "g NaN",
      "",
    ].join("\n"),
  );
  expect(e.types.get("x_total")).toBe("counter");
  expect(e.help.get("x_total")).toBe("A counter.");
  expect(e.samples[0]).toEqual({
    name: "x_total",
    labels: { a: "1", b: 'with "quote" and \\ and \n' },
    value: 3,
  });
  expect(e.samples[1]).toEqual({ name: "x_total", labels: {}, value: 4 });
  expect(buckets(e, "h", {})).toEqual([[Number.POSITIVE_INFINITY, 2]]);
  expect(Number.isNaN(sample(e, "g")!)).toBe(true);
  expect(() => parseProm("bad line here")).toThrow(/unparsable/);
});

// -------------------------------------------------------------------- seeded gauges

describe("queue-wide gauges from a seeded database", () => {
  let h: Harness;
  let endpoints: string[];
  let oldestCreated: Date;

  beforeAll(async () => {
    h = await startHarness();
    const app = await h.call("POST", `${V1}/app`, { name: "metrics" });
    endpoints = [];
    for (let i = 0; i < 4; i++) {
      const ep = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
        url: `${DEAD_URL}/m${i}`,
      });
      expect(ep.status).toBe(201);
      endpoints.push(ep.body.id);
    }
    oldestCreated = new Date(Date.now() - 90_000);
    // 3 pending (the oldest 90 s old), 2 failed, 4 in flight, 5 dead, 6 delivered, 1 canceled
    const rows: [string, number, number][] = [
      ["pending", 3, 0],
      ["failed", 2, 1],
      ["in_flight", 4, 1],
      ["dead_letter", 5, 5],
      ["delivered", 6, 1],
      ["canceled", 1, 0],
    ];
    for (const [status, n, attempts] of rows) {
      await h.db.pool.query(
        `with m as (
           insert into messages (id, app_id, event_type, payload, created_at)
           select 'msg_m_' || $2::text || '_' || g, $1::text, 'e', '{}', now() - interval '10 seconds'
           from generate_series(1, $3::int) g returning id
         )
         insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                                 next_attempt_at, created_at)
         select id, $4::text, $1::text, $2::text, $5::int, 5, now() + interval '1 day', now() - interval '10 seconds' from m`,
        [app.body.id, status, n, endpoints[0], attempts],
      );
    }
    await h.db.pool.query(
      // due since it was created: waiting for 90 s (pending rows not yet due do not count)
      "update deliveries set created_at = $1, next_attempt_at = $1 where id = (select min(id) from deliveries where status = 'pending')",
      [oldestCreated],
    );
    await h.db.pool.query(
      "update endpoint_health set circuit_state = 'open', opened_at = now() where endpoint_id = $1",
      [endpoints[1]],
    );
    await h.db.pool.query(
      "update endpoint_health set circuit_state = 'half_open', opened_at = now() where endpoint_id = $1",
      [endpoints[2]],
    );
    // paused by a Retry-After: one for an hour more, one whose pause is over
    await h.db.pool.query(
      "update endpoint_health set paused_until = now() + interval '1 hour' where endpoint_id = $1",
      [endpoints[0]],
    );
    await h.db.pool.query(
      "update endpoint_health set paused_until = now() - interval '1 second' where endpoint_id = $1",
      [endpoints[1]],
    );
  });
  afterAll(async () => {
    await h?.close();
  });

  async function scrape(api = h.api, headers: Record<string, string> = {}) {
    const res = await api.inject({ method: "GET", url: "/metrics", headers });
    return res;
  }
  /** One scrape: the queue-wide gauges read the database in it (see "the first scrape"). */
  const scrapeCurrent = scrape;

  test("queue depth by state, dead letters, oldest pending age, circuits", async () => {
    const before = Date.now();
    const res = await scrapeCurrent();
    const after = Date.now();
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    const e = parseProm(res.body);

    expect(sample(e, "hookrelay_queue_depth", { state: "pending" })).toBe(3);
    expect(sample(e, "hookrelay_queue_depth", { state: "failed" })).toBe(2);
    expect(sample(e, "hookrelay_queue_depth", { state: "in_flight" })).toBe(4);
    expect(labelValues(e, "hookrelay_queue_depth", "state")).toEqual([
      "failed",
      "in_flight",
      "pending",
    ]);
    expect(sample(e, "hookrelay_dead_letters")).toBe(5);
    const age = sample(e, "hookrelay_oldest_pending_age_seconds")!;
    expect(age).toBeGreaterThanOrEqual((before - oldestCreated.getTime()) / 1000 - 1);
    expect(age).toBeLessThanOrEqual((after - oldestCreated.getTime()) / 1000 + 1);
    expect(sample(e, "hookrelay_circuits", { state: "closed" })).toBe(2);
    expect(sample(e, "hookrelay_circuits", { state: "open" })).toBe(1);
    expect(sample(e, "hookrelay_circuits", { state: "half_open" })).toBe(1);
    expect(sample(e, "hookrelay_endpoints_paused")).toBe(1);
    expect(sample(e, "hookrelay_metrics_scrape_ok")).toBe(1);
    // an API-only process: no worker in flight, nothing delivered by this process
    expect(sample(e, "hookrelay_worker_in_flight")).toBe(0);

    expect(e.types.get("hookrelay_queue_depth")).toBe("gauge");
    expect(e.types.get("hookrelay_deliveries_total")).toBe("counter");
    expect(e.types.get("hookrelay_attempts_total")).toBe("counter");
    expect(e.types.get("hookrelay_attempt_duration_seconds")).toBe("histogram");
    expect(e.types.get("hookrelay_claim_batch_size")).toBe("histogram");
    for (const name of e.types.keys()) expect(e.help.get(name)?.length ?? 0).toBeGreaterThan(10);
  });

  test("an empty queue: zero depth and an oldest age of 0", async () => {
    await h.db.pool.query(
      "update deliveries set status = 'canceled' where status in ('pending', 'failed', 'in_flight')",
    );
    await h.db.pool.query("update endpoint_health set circuit_state = 'closed'");
    const e = parseProm((await scrapeCurrent()).body);
    for (const state of ["pending", "failed", "in_flight"])
      expect(sample(e, "hookrelay_queue_depth", { state })).toBe(0);
    expect(sample(e, "hookrelay_oldest_pending_age_seconds")).toBe(0);
    expect(sample(e, "hookrelay_circuits", { state: "closed" })).toBe(4);
    expect(sample(e, "hookrelay_circuits", { state: "open" })).toBe(0);
    expect(sample(e, "hookrelay_dead_letters")).toBe(5);
  });

  test("with a metrics token: 401 without it or with anything else, 200 with it", async () => {
    const api = await buildTestApi({
      pool: h.db.pool,
      config: { ...h.config, metricsToken: "m3trics-t0ken" },
      logger: silentLogger,
    });
    try {
      const none = await scrape(api);
      expect(none.statusCode).toBe(401);
      expect(JSON.parse(none.body)).toMatchObject({ code: "unauthorized" });
      expect((await scrape(api, { authorization: "Bearer wrong" })).statusCode).toBe(401);
      expect((await scrape(api, { authorization: "m3trics-t0ken" })).statusCode).toBe(401);
      // the admin API key is not the metrics token
      expect((await scrape(api, { authorization: `Bearer ${h.adminKey}` })).statusCode).toBe(401);
      const ok = await scrapeCurrent(api, { authorization: "Bearer m3trics-t0ken" });
      expect(ok.statusCode).toBe(200);
      expect(sample(parseProm(ok.body), "hookrelay_dead_letters")).toBe(5);
      // without a token configured, /metrics is open (the harness API)
      expect((await scrape()).statusCode).toBe(200);
    } finally {
      await api.close();
    }
  });

  // Regression: the queue-wide gauges were once set inside another gauge's collect(), so
  // each scrape showed the previous scrape's values and the first none; each gauge now
  // reads the database (one query per scrape) in its own collect().
  test("the first scrape already shows the queue as it is", async () => {
    const m = makeMetrics({ pool: h.db.pool, maxEndpointLabels: 10 });
    const e = parseProm(await m.registry.metrics());
    expect(sample(e, "hookrelay_dead_letters")).toBe(5);
    expect(sample(e, "hookrelay_circuits", { state: "closed" })).toBe(4);
  });

  test("recordResults: outcomes, status classes, latency buckets, and the endpoint label limit", async () => {
    const m = makeMetrics({ pool: h.db.pool, maxEndpointLabels: 2 });
    let n = 0;
    const result = (
      endpointId: string,
      nextStatus: string,
      statusCode: number | null,
      latencyMs: number,
    ): DeliveryResult =>
      ({
        deliveryId: ++n,
        claimToken: "00000000-0000-0000-0000-000000000000",
        messageId: `msg_${n}`,
        endpointId,
        appId: "app_x",
        trigger: "scheduled",
        url: "http://x",
        attemptNumber: 1,
        nextStatus,
        retryDelayMs: 0,
        startedAt: new Date(),
        latencyMs,
        success: nextStatus === "delivered",
        statusCode,
        errorKind: statusCode === null ? "timeout" : null,
        error: null,
        responseBody: null,
        isProbe: false,
        pauseMs: null,
      }) as DeliveryResult;
    m.recordResults([result("ep_a", "delivered", 200, 3), result("ep_a", "delivered", 204, 30)]);
    m.recordResults([result("ep_b", "failed", 503, 700), result("ep_c", "dead_letter", 404, 12)]);
    m.recordResults([
      result("ep_d", "dead_letter", null, 15_000),
      { ...result("ep_a", "failed", 429, 3), errorKind: "rate_limited", backpressure: true },
    ]);
    m.recordClaim(2);
    m.recordClaim(7);
    const e = parseProm(await m.registry.metrics());

    expect(sample(e, "hookrelay_deliveries_total", { outcome: "delivered" })).toBe(2);
    expect(sample(e, "hookrelay_deliveries_total", { outcome: "failed" })).toBe(2);
    expect(sample(e, "hookrelay_deliveries_total", { outcome: "dead_letter" })).toBe(2);
    expect(sample(e, "hookrelay_attempts_total", { status_class: "2xx" })).toBe(2);
    expect(sample(e, "hookrelay_attempts_total", { status_class: "4xx" })).toBe(2);
    expect(sample(e, "hookrelay_attempts_total", { status_class: "5xx" })).toBe(1);
    expect(sample(e, "hookrelay_attempts_total", { status_class: "error" })).toBe(1);
    expect(sample(e, "hookrelay_backpressure_answers_total")).toBe(1);

    // the first two endpoints seen keep their label; the rest share "other"
    expect(labelValues(e, "hookrelay_attempt_duration_seconds_count", "endpoint")).toEqual([
      "ep_a",
      "ep_b",
      "other",
    ]);
    expect(sample(e, "hookrelay_attempt_duration_seconds_count", { endpoint: "ep_a" })).toBe(3);
    expect(sample(e, "hookrelay_attempt_duration_seconds_count", { endpoint: "ep_b" })).toBe(1);
    expect(sample(e, "hookrelay_attempt_duration_seconds_count", { endpoint: "other" })).toBe(2);
    expect(sample(e, "hookrelay_attempt_duration_seconds_sum", { endpoint: "ep_a" })).toBeCloseTo(
      0.036,
      9,
    );
    expect(sample(e, "hookrelay_attempt_duration_seconds_sum", { endpoint: "other" })).toBeCloseTo(
      15.012,
      9,
    );
    const a = new Map(buckets(e, "hookrelay_attempt_duration_seconds", { endpoint: "ep_a" }));
    expect(a.get(0.005)).toBe(2); // 3 ms, 3 ms
    expect(a.get(0.025)).toBe(2);
    expect(a.get(0.05)).toBe(3); // + 30 ms
    expect(a.get(Number.POSITIVE_INFINITY)).toBe(3);
    const other = new Map(buckets(e, "hookrelay_attempt_duration_seconds", { endpoint: "other" }));
    expect(other.get(0.01)).toBe(0);
    expect(other.get(0.025)).toBe(1); // 12 ms
    expect(other.get(10)).toBe(1);
    expect(other.get(30)).toBe(2); // + 15 s
    expect(sample(e, "hookrelay_claim_batch_size_count")).toBe(2);
    expect(sample(e, "hookrelay_claim_batch_size_sum")).toBe(9);

    // a limit of 0 labels no endpoint at all
    const none = makeMetrics({ pool: h.db.pool, maxEndpointLabels: 0 });
    none.recordResults([result("ep_a", "delivered", 200, 1), result("ep_b", "delivered", 200, 1)]);
    const e0 = parseProm(await none.registry.metrics());
    expect(labelValues(e0, "hookrelay_attempt_duration_seconds_count", "endpoint")).toEqual([
      "other",
    ]);
    expect(sample(e0, "hookrelay_attempt_duration_seconds_count", { endpoint: "other" })).toBe(2);
  });
});

// --------------------------------------------------------- a full runtime delivering

describe("a runtime's /metrics after real deliveries", () => {
  let db: TestDb;
  let rx: Receiver;
  let runtime: Runtime;
  const ADMIN = "metrics-test-admin-key";
  const TOKEN = "scrape-token-123";

  beforeAll(async () => {
    db = await createTestDb();
    rx = await startReceiver((req) => {
      if (req.path === "/ok") return { status: 200 };
      if (req.path === "/fail") return { status: 500, body: "boom" };
      return { status: 400, body: "bad" };
    });
    const config = testConfig({
      databaseUrl: db.url,
      host: "127.0.0.1",
      port: 0,
      adminKey: ADMIN,
      metricsToken: TOKEN,
      metricsMaxEndpoints: 2,
      dbPoolSize: 5,
    });
    runtime = await startRuntime(
      config,
      { api: true, worker: true },
      { logger: silentLogger, redactor: makeRedactor() },
    );
  });
  afterAll(async () => {
    await runtime?.stop();
    await rx?.close();
    await db?.drop();
  });

  async function api(method: string, path: string, body?: unknown) {
    const res = await fetch(`${runtime.apiUrl}${V1}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN}`,
        ...(body !== undefined && { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as CallResult["body"] };
  }

  async function scrape(): Promise<Exposition> {
    const res = await fetch(`${runtime.apiUrl}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(200);
    return parseProm(await res.text());
  }

  test("deliveries, attempts and latency histograms count what the worker did", async () => {
    expect(runtime.apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const unauthorized = await fetch(`${runtime.apiUrl}/metrics`);
    expect(unauthorized.status).toBe(401);

    const app = (await api("POST", "/app", { name: "runtime-metrics" })).body.id;
    const endpoint = async (
      url: string,
      eventType: string,
      extra: Record<string, unknown> = {},
    ) => {
      const res = await api("POST", `/app/${app}/endpoint`, {
        url,
        eventTypes: [eventType],
        ...extra,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.id as string;
    };
    const ok = await endpoint(`${rx.url}/ok`, "ok");
    const fail = await endpoint(`${rx.url}/fail`, "fail", { maxAttempts: 2 });
    const bad = await endpoint(`${rx.url}/bad`, "bad");
    const refused = await endpoint(`${DEAD_URL}/refused`, "refused", { maxAttempts: 1 });
    const send = async (eventType: string, n: number) => {
      for (let i = 0; i < n; i++) {
        expect((await api("POST", `/app/${app}/msg`, { eventType, payload: { i } })).status).toBe(
          202,
        );
      }
    };
    const outcome = async (o: string) =>
      sample(await scrape(), "hookrelay_deliveries_total", { outcome: o }) ?? 0;

    // One endpoint at a time, so which endpoints are "seen first" is known.
    await send("ok", 3);
    await waitFor(async () => (await outcome("delivered")) === 3, 15_000, "3 delivered");
    await send("fail", 2);
    await waitFor(
      async () => (await outcome("dead_letter")) === 2,
      15_000,
      "2 dead after 2 attempts each",
    );
    await send("bad", 1);
    await waitFor(
      async () => (await outcome("dead_letter")) === 3,
      15_000,
      "the 400 dead-lettered",
    );
    await send("refused", 1);
    await waitFor(
      async () => (await outcome("dead_letter")) === 4,
      15_000,
      "the refused connection dead-lettered",
    );

    const e = await scrape();
    expect(sample(e, "hookrelay_deliveries_total", { outcome: "delivered" })).toBe(3);
    expect(sample(e, "hookrelay_deliveries_total", { outcome: "failed" })).toBe(2);
    expect(sample(e, "hookrelay_deliveries_total", { outcome: "dead_letter" })).toBe(4);
    expect(sample(e, "hookrelay_attempts_total", { status_class: "2xx" })).toBe(3);
    expect(sample(e, "hookrelay_attempts_total", { status_class: "5xx" })).toBe(4);
    expect(sample(e, "hookrelay_attempts_total", { status_class: "4xx" })).toBe(1);
    expect(sample(e, "hookrelay_attempts_total", { status_class: "error" })).toBe(1);

    // metricsMaxEndpoints = 2: the first two endpoints have their own series, the rest "other"
    expect(labelValues(e, "hookrelay_attempt_duration_seconds_count", "endpoint")).toEqual(
      [ok, fail, "other"].sort(),
    );
    expect(sample(e, "hookrelay_attempt_duration_seconds_count", { endpoint: ok })).toBe(3);
    expect(sample(e, "hookrelay_attempt_duration_seconds_count", { endpoint: fail })).toBe(4);
    expect(sample(e, "hookrelay_attempt_duration_seconds_count", { endpoint: "other" })).toBe(2);
    for (const id of [bad, refused])
      expect(e.samples.some((s) => s.labels.endpoint === id)).toBe(false);
    for (const [endpointLabel, count] of [
      [ok, 3],
      [fail, 4],
      ["other", 2],
    ] as const) {
      const b = buckets(e, "hookrelay_attempt_duration_seconds", { endpoint: endpointLabel });
      expect(b.length).toBe(13); // 12 bounds and +Inf
      expect(b.at(-1)).toEqual([Number.POSITIVE_INFINITY, count]);
      for (let i = 1; i < b.length; i++) expect(b[i]![1]).toBeGreaterThanOrEqual(b[i - 1]![1]);
      // a loopback receiver answers well within 2 s
      expect(b.find(([le]) => le === 2)![1]).toBe(count);
    }
    // every attempt was claimed once: the claim sizes add up to the attempts
    expect(sample(e, "hookrelay_claim_batch_size_sum")).toBe(9);
    expect(sample(e, "hookrelay_claim_batch_size_count")).toBeGreaterThanOrEqual(4);
    // and the queue-wide gauges agree with the database
    expect(sample(e, "hookrelay_dead_letters")).toBe(4);
    for (const state of ["pending", "failed", "in_flight"])
      expect(sample(e, "hookrelay_queue_depth", { state })).toBe(0);
    expect(sample(e, "hookrelay_oldest_pending_age_seconds")).toBe(0);
    expect(sample(e, "hookrelay_worker_in_flight")).toBe(0);
    expect(rx.on("/ok")).toHaveLength(3);
    expect(rx.on("/fail")).toHaveLength(4);
  });
});

test("a worker-only runtime serves /metrics on its metrics port, behind the token", async () => {
  const db = await createTestDb();
  // a free port: the metrics port has no "any" (0 turns the server off)
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise((resolve) => probe.close(resolve));
  const runtime = await startRuntime(
    testConfig({
      databaseUrl: db.url,
      host: "127.0.0.1",
      metricsPort: port,
      metricsToken: "worker-scrape-token",
      dbPoolSize: 3,
    }),
    { api: false, worker: true },
    { logger: silentLogger, redactor: makeRedactor() },
  );
  try {
    expect(runtime.apiUrl).toBeNull();
    const url = `http://127.0.0.1:${port}/metrics`;
    const refused = await fetch(url);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ code: "unauthorized" });
    const res = await fetch(url, { headers: { authorization: "Bearer worker-scrape-token" } });
    expect(res.status).toBe(200);
    const e = parseProm(await res.text());
    expect(sample(e, "hookrelay_worker_in_flight")).toBe(0);
    expect(sample(e, "hookrelay_dead_letters")).toBe(0);
    // the worker's port serves nothing else
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/health/ping`)).status).toBe(404);
  } finally {
    await runtime.stop();
    await db.drop();
  }
});
