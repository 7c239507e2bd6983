/**
 * Workers as real OS processes (`node dist/cli/main.js worker`) sharing one test database:
 * exactly-once under competition, recovery after kill -9, graceful SIGTERM, concurrent
 * migrations, and what a process loads (a worker delivering over HTTP untraced: not the
 * HTTP application, the broker clients or the tracing SDK; `migrate`: not the server).
 * Apps, endpoints and messages are created in-process; only the delivery side runs in the
 * child processes.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, expect, test } from "vitest";
import { loadMigrations } from "../src/db/migrate.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { createTestDb } from "./helpers/db.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import {
  type HookrelayProcess,
  killAll,
  spawnHookrelay,
  startWorkers,
} from "./helpers/processes.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

/** Starts a worker process and resolves once it says it is running. */
async function startWorker(extra: Record<string, string> = {}): Promise<HookrelayProcess> {
  const [worker] = await startWorkers(1, h.db.url, extra);
  return worker!;
}

// ---------------------------------------------------------------- receivers

interface Tracked {
  id: string;
  arrivedAt: number;
  finishedAt: number | null;
  /** the connection closed before the response was written */
  aborted: boolean;
}

interface TrackingReceiver {
  url: string;
  requests: Tracked[];
  close(): Promise<void>;
}

/** A receiver that answers 200 after `delayMs` and records whether each response completed. */
async function startTrackingReceiver(delayMs: number): Promise<TrackingReceiver> {
  const requests: Tracked[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const t: Tracked = {
        id: String(req.headers["webhook-id"]),
        arrivedAt: Date.now(),
        finishedAt: null,
        aborted: false,
      };
      requests.push(t);
      res.on("finish", () => {
        t.finishedAt = Date.now();
      });
      res.on("close", () => {
        if (!res.writableFinished) t.aborted = true;
      });
      setTimeout(() => {
        if (!res.destroyed) res.end("ok");
      }, delayMs);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

// ---------------------------------------------------------------- setup

let h: Harness;
const closers: (() => Promise<void>)[] = [];

beforeAll(async () => {
  h = await startHarness();
});

afterEach(async () => {
  await killAll();
  while (closers.length > 0) await closers.pop()!();
});

afterAll(async () => {
  await killAll();
  await h?.close();
});

/** Apps with one endpoint each (a message fans out to exactly one delivery). */
async function makeApps(
  count: number,
  url: (i: number) => string,
  policy: Record<string, unknown> = {},
) {
  const apps: { appId: string; endpointId: string }[] = [];
  for (let i = 0; i < count; i++) {
    const app = await h.call("POST", "/api/v1/app", { name: `w-${i}` });
    expect(app.status).toBe(201);
    const ep = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
      url: url(i),
      ...policy,
    });
    expect(ep.status, JSON.stringify(ep.body)).toBe(201);
    apps.push({ appId: app.body.id, endpointId: ep.body.id });
  }
  return apps;
}

/** Enqueues `total` messages round-robin over the apps, in parallel chunks; returns their ids. */
async function enqueueMany(apps: { appId: string }[], total: number): Promise<string[]> {
  const ids: string[] = [];
  const chunk = 100;
  for (let start = 0; start < total; start += chunk) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(chunk, total - start) }, (_, k) => {
        const i = start + k;
        return enqueueMessage(
          h.db.pool,
          { appId: apps[i % apps.length]!.appId, eventType: "bulk", payload: `{"i":${i}}` },
          5,
        );
      }),
    );
    for (const r of batch) {
      expect(r.deliveries).toBe(1);
      ids.push(r.messageId);
    }
  }
  return ids;
}

async function statusCounts(appIds: string[]): Promise<Record<string, number>> {
  const { rows } = await h.db.pool.query(
    "select status, count(*)::int as n from deliveries where app_id = any($1::text[]) group by status",
    [appIds],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

/** Waits until `n` deliveries of the apps are delivered; on timeout says what the state was. */
async function waitForDelivered(
  appIds: string[],
  n: number,
  timeoutMs: number,
  sentIds: () => string[],
) {
  let last: Record<string, number> = {};
  try {
    await waitFor(async () => {
      last = await statusCounts(appIds);
      return last.delivered === n;
    }, timeoutMs);
  } catch {
    const sent = sentIds();
    throw new Error(
      `not all ${n} deliveries were delivered within ${timeoutMs} ms: states ${JSON.stringify(last)}, ` +
        `${sent.length} requests received, ${new Set(sent).size} distinct message ids`,
    );
  }
}

function countIds(ids: Iterable<string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

// ---------------------------------------------------------------- tests

test("4 worker processes deliver 2,000 messages exactly once", async () => {
  const rx: Receiver = await startReceiver();
  closers.push(() => rx.close());
  const apps = await makeApps(4, (i) => `${rx.url}/bulk-${i}`, { maxInFlight: 50 });
  const appIds = apps.map((a) => a.appId);

  await Promise.all([startWorker(), startWorker(), startWorker(), startWorker()]);
  const ids = await enqueueMany(apps, 2_000);

  await waitForDelivered(appIds, 2_000, 35_000, () =>
    rx.requests.map((r) => String(r.headers["webhook-id"])),
  );
  // Every claim ended with the write of its last result: no worker holds a row, so no
  // request of theirs is still to come and what the receiver has is all there is.
  expect((await h.db.pool.query("select token from claims")).rows).toEqual([]);

  const seen = countIds(rx.requests.map((r) => String(r.headers["webhook-id"])));
  const duplicates = [...seen.values()].filter((n) => n > 1).length;
  expect(seen.size).toBe(2_000);
  expect(duplicates).toBe(0);
  expect(rx.requests).toHaveLength(2_000);
  expect(new Set(seen.keys())).toEqual(new Set(ids));
  expect(await statusCounts(appIds)).toEqual({ delivered: 2_000 });
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n, count(distinct delivery_id)::int as d from attempts where app_id = any($1::text[])",
    [appIds],
  );
  expect(rows[0]).toEqual({ n: 2_000, d: 2_000 });
});

test("after kill -9 mid-batch a worker started afterwards delivers everything, nothing lost", async () => {
  // Slow answers (1 s), so that the kill surely lands while requests are in flight even on
  // a loaded machine.
  const rx = await startTrackingReceiver(1_000);
  closers.push(() => rx.close());
  const apps = await makeApps(3, (i) => `${rx.url}/crash-${i}`, { timeoutMs: 3_000 });
  const appIds = apps.map((a) => a.appId);
  const env = { HOOKRELAY_LEASE_MARGIN_MS: "1000" };

  const first = await startWorker(env);
  const ids = await enqueueMany(apps, 300);
  // 3 endpoints x 20 in flight (the default per-endpoint limit), 1 s each. The kill
  // lands once results have been recorded, while some endpoint has all its 20 slots taken
  // (its rows must come back even though they fill its whole in-flight allowance) and
  // while the receiver holds a request that still has 500+ ms to go.
  let busiest = 0;
  await waitFor(
    async () => {
      const now = Date.now();
      const fresh = rx.requests.some((r) => r.finishedAt === null && now - r.arrivedAt < 500);
      if (!fresh) return false;
      const { rows } = await h.db.pool.query(
        `select count(*) filter (where status = 'delivered')::int as delivered,
                coalesce(max(n), 0)::int as busiest
         from deliveries
         left join (select endpoint_id, count(*) as n from deliveries
                    where status = 'in_flight' and app_id = any($1::text[])
                    group by endpoint_id) f using (endpoint_id)
         where app_id = any($1::text[])`,
        [appIds],
      );
      busiest = rows[0].busiest;
      return rows[0].delivered >= 20 && busiest >= 20;
    },
    // (the moment comes about once a second; at a load average of 20 it took over 20 s)
    60_000,
    "an endpoint at its in-flight limit after some deliveries completed",
  );
  process.kill(first.pid, "SIGKILL");
  const { signal } = await first.exited;
  expect(signal).toBe("SIGKILL");
  const seenAtKill = rx.requests.length;
  // The receiver notices the dropped connections: each request ends answered or cut off.
  await waitFor(
    () => rx.requests.every((r) => r.finishedAt !== null || r.aborted),
    10_000,
    "the receiver to see the killed worker's connections end",
  );
  const cutOff = rx.requests.filter((r) => r.aborted).length;
  expect(cutOff).toBeGreaterThan(0); // the kill really caught requests in flight
  const counts = await statusCounts(appIds);
  expect(counts.in_flight ?? 0).toBeGreaterThan(0); // left behind under their leases

  await startWorker(env);
  await waitForDelivered(appIds, 300, 30_000, () => rx.requests.map((r) => r.id));

  const completed = countIds(rx.requests.filter((r) => r.finishedAt !== null).map((r) => r.id));
  const lost = ids.filter((id) => !completed.has(id));
  const duplicates = rx.requests.length - new Set(rx.requests.map((r) => r.id)).size;
  console.log(
    `kill -9: ${seenAtKill} requests seen before the kill (busiest endpoint ${busiest} in flight), ` +
      `${cutOff} cut off in flight; ` +
      `afterwards ${rx.requests.length} requests in all, ${duplicates} duplicates, ${lost.length} lost`,
  );
  expect(lost).toEqual([]);
  expect(await statusCounts(appIds)).toEqual({ delivered: 300 });
  // The dead worker's claims were handed back and are gone; the new worker's all ended.
  expect((await h.db.pool.query("select token from claims")).rows).toEqual([]);
});

test("SIGTERM lets in-flight requests finish, records them and exits 0", async () => {
  const rx = await startTrackingReceiver(800);
  closers.push(() => rx.close());
  // ten at once from the first claim: adaptive concurrency (on by default) would start at one
  const [app] = await makeApps(1, () => `${rx.url}/drain`, {
    maxInFlight: 10,
    adaptiveConcurrency: "off",
  });
  const appIds = [app!.appId];

  const worker = await startWorker();
  const ids = await enqueueMany([app!], 30);
  await waitFor(() => rx.requests.length >= 10, 20_000, "ten requests in flight");
  expect(rx.requests.every((r) => r.finishedAt === null)).toBe(true); // truly in flight
  const signalledAt = Date.now();
  process.kill(worker.pid, "SIGTERM");
  const exit = await worker.exited;
  const exitedAfterMs = Date.now() - signalledAt;

  expect(exit, worker.stderr).toEqual({ code: 0, signal: null });
  console.log(`SIGTERM to exit: ${exitedAfterMs} ms (requests take 800 ms each)`);
  expect(rx.requests.length).toBeGreaterThanOrEqual(10);
  for (const r of rx.requests) {
    expect(r.aborted, `request ${r.id} was cut off`).toBe(false);
    expect(r.finishedAt, `request ${r.id} never finished`).not.toBeNull();
  }

  const sent = [...new Set(rx.requests.map((r) => r.id))];
  expect(sent).toHaveLength(rx.requests.length);
  const { rows } = await h.db.pool.query(
    `select d.message_id, d.status, d.attempt_count,
            (select count(*)::int from attempts a where a.delivery_id = d.id) as attempts
     from deliveries d where d.app_id = $1`,
    [app!.appId],
  );
  const byMessage = new Map(rows.map((r) => [r.message_id as string, r]));
  for (const id of sent) {
    expect(byMessage.get(id)).toMatchObject({ status: "delivered", attempt_count: 1, attempts: 1 });
  }
  const counts = await statusCounts(appIds);
  expect(counts.in_flight ?? 0).toBe(0);
  expect(counts.delivered).toBe(sent.length);
  // What was never sent waits, untouched, for the next worker.
  expect(counts.pending ?? 0).toBe(ids.length - sent.length);
  for (const r of rows) if (r.status === "pending") expect(r.attempt_count).toBe(0);
});

test("two processes migrating an empty database at once both succeed", async () => {
  const empty = await createTestDb({ template: false });
  closers.push(() => empty.drop());
  const env = { DATABASE_URL: empty.url, HOOKRELAY_LOG_LEVEL: "warn" };
  const a = spawnHookrelay(["migrate"], env);
  const b = spawnHookrelay(["migrate"], env);
  const [ea, eb] = await Promise.all([a.exited, b.exited]);
  expect(ea, a.stderr).toEqual({ code: 0, signal: null });
  expect(eb, b.stderr).toEqual({ code: 0, signal: null });

  const migrations = await loadMigrations();
  const { rows } = await empty.pool.query("select id, name from hookrelay_migrations order by id");
  expect(rows).toEqual(migrations.map((m) => ({ id: m.id, name: m.name })));

  // Each migration was applied by exactly one of the two.
  const appliedBy = (out: string) =>
    (/^applied: (.*)$/m.exec(out)?.[1] ?? "").split(", ").filter(Boolean);
  const applied = [...appliedBy(a.stdout), ...appliedBy(b.stdout)].sort();
  expect(applied).toEqual(migrations.map((m) => m.name).sort());

  const tables = await empty.pool.query(
    "select count(*)::int as n from information_schema.tables where table_name in ('deliveries', 'attempts', 'endpoints')",
  );
  expect(tables.rows[0].n).toBe(3);
});

// What a worker delivering over HTTP must not load: the HTTP application (Fastify, Ajv, the
// API docs), the broker clients (loaded with a first NATS or RabbitMQ connection), the
// tracing SDK (loaded only when tracing is configured) and the SOCKS5 client with its
// address parser (loaded with a first SOCKS5 tunnel). Each costs every worker's start.
const NOT_IN_AN_HTTP_WORKER = [
  "fastify",
  "ajv",
  "@fastify/swagger",
  "@fastify/swagger-ui",
  "nats",
  "amqplib",
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/exporter-trace-otlp-proto",
  "socks",
  "ip-address",
];

/** Runs `body` with the preload that records a process's packages; answers their names. */
async function packagesLoadedBy(
  body: (env: Record<string, string>) => Promise<void>,
): Promise<Set<string>> {
  const dir = mkdtempSync(path.join(tmpdir(), "loaded-packages-"));
  try {
    const file = path.join(dir, "packages");
    const preload = pathToFileURL(path.join(import.meta.dirname, "helpers/loaded-packages.mjs"));
    await body({ NODE_OPTIONS: `--import=${preload.href}`, LOADED_PACKAGES_FILE: file });
    return new Set(readFileSync(file, "utf8").split("\n").filter(Boolean));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("a worker process that delivers over HTTP loads neither the API, the broker clients, the tracing SDK nor the SOCKS5 client", async () => {
  const rx = await startReceiver();
  closers.push(() => rx.close());
  const [app] = await makeApps(1, () => `${rx.url}/lean`);
  const loaded = await packagesLoadedBy(async (env) => {
    const worker = await startWorker(env);
    await enqueueMany([app!], 1);
    await waitForDelivered([app!.appId], 1, 20_000, () => rx.requests.map((r) => r.path));
    process.kill(worker.pid, "SIGTERM");
    expect(await worker.exited, worker.stderr).toEqual({ code: 0, signal: null });
  });
  // the record sees what a worker does load: its database driver and HTTP client
  expect([...loaded]).toEqual(expect.arrayContaining(["pg", "undici", "pino"]));
  expect(NOT_IN_AN_HTTP_WORKER.filter((name) => loaded.has(name))).toEqual([]);
});

test("hookrelay migrate loads the database layer, not the server", async () => {
  const loaded = await packagesLoadedBy(async (env) => {
    const migrate = spawnHookrelay(["migrate"], { DATABASE_URL: h.db.url, ...env });
    expect(await migrate.exited, migrate.stderr).toEqual({ code: 0, signal: null });
    expect(migrate.stdout).toBe("schema up to date\n");
  });
  expect([...loaded]).toEqual(expect.arrayContaining(["pg", "pino"]));
  const server = ["fastify", "undici", "prom-client", "nats", "amqplib"];
  expect(server.filter((name) => loaded.has(name))).toEqual([]);
});
