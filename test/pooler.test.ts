/**
 * Every role through Debian's PgBouncer 1.18 in transaction mode over Debian's PostgreSQL
 * 15 (docs/database.md, "Connection poolers"): the start-up line says what DATABASE_URL
 * reaches; API calls, the library's send() in the caller's own transaction, and a worker
 * whose requests outlast its heartbeat threshold all work with no error and no duplicate;
 * a SIGKILLed worker's claims come back by heartbeat; with HOOKRELAY_DATABASE_DIRECT_URL
 * LISTEN works. A pooler in statement mode is refused with one sentence.
 *
 * Needs /usr/lib/postgresql/15 and /usr/sbin/pgbouncer (.ci/run installs them): without
 * them the file skips loudly, except in CI, where it fails.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { detectPooler } from "../src/db/pooler-detect.ts";
import { HookRelayError } from "../src/errors.ts";
import { HookRelay } from "../src/library.ts";
import { makeProcessLogging, type Runtime, startRuntime } from "../src/runtime.ts";
import { testConfig } from "./helpers/harness.ts";
import { linesInto } from "./helpers/log-lines.ts";
import { type PooledDatabase, pgbouncerMissing, startPooledDatabase } from "./helpers/pgbouncer.ts";
import { type HookrelayProcess, killAll, startWorkers } from "./helpers/processes.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const missing = pgbouncerMissing();
if (missing) {
  const say = `test/pooler.test.ts: ${missing} not installed (apt-get install postgresql-15 pgbouncer)`;
  if (process.env.CI) throw new Error(`${say}: required in CI`);
  console.warn(`\n!!! SKIPPING ${say} !!!\n`);
}

const ADMIN_KEY = "pooler-test-admin-key-0123456789";
/** HOOKRELAY_LIVENESS_JUDGE_AFTER_MS of this file's workers (3 s by default) */
const JUDGE_AFTER_MS = 500;
let db: PooledDatabase;
const runtimes: Runtime[] = [];
const receivers: Receiver[] = [];

beforeAll(async () => {
  if (missing) return;
  db = await startPooledDatabase({ mode: "transaction", poolSize: 1 });
}, 120_000);

afterAll(async () => {
  await killAll();
  for (const r of runtimes) await r.stop().catch(() => undefined);
  for (const r of receivers) await r.close();
  await db?.stop();
}, 60_000);

/** A runtime on `env`'s URLs, its log lines kept. */
async function start(
  settings: { databaseUrl: string; databaseDirectUrl?: string },
  roles = { api: true, worker: true },
) {
  const lines: string[] = [];
  const config = testConfig({
    ...settings,
    port: 0,
    adminKey: ADMIN_KEY,
    dbStartupWaitMs: 0,
    delivery: { ...loadConfig({}).delivery, timeoutMs: 10_000, maxInFlight: 50 },
    worker: {
      ...loadConfig({}).worker,
      // the defaults: the mode's own poll applies without a direct URL
      pollIntervalMs: 1_000,
      heartbeatStaleMs: 2_000,
      // judging others' liveness after 0.5 s instead of 3 s, so the waits below are short
      livenessJudgeAfterMs: JUDGE_AFTER_MS,
    },
  });
  const logging = makeProcessLogging(config, linesInto(lines));
  const runtime = await startRuntime(config, roles, logging);
  runtimes.push(runtime);
  const modeLine = lines
    .map((l) => JSON.parse(l) as { msg: string; pooler?: string })
    .find((l) => l.pooler !== undefined)?.msg;
  return { runtime, lines, modeLine };
}

async function api(runtime: Runtime, method: string, path: string, body?: unknown) {
  const res = await fetch(`${runtime.apiUrl}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_KEY}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: response JSON of many shapes, read field by field
  const json: any = await res.json().catch(() => null);
  return { status: res.status, body: json };
}

/** An app with one endpoint at `rx` (path `name`); returns the app's id. */
async function appWithEndpoint(runtime: Runtime, rx: Receiver, name: string): Promise<string> {
  const app = await api(runtime, "POST", "/app", { name });
  expect(app.status).toBe(201);
  const ep = await api(runtime, "POST", `/app/${app.body.id}/endpoint`, {
    url: `${rx.url}/${name}`,
  });
  expect(ep.status).toBe(201);
  return app.body.id;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** Sends `n` messages one at a time; returns the ms from each 202 to its arrival. */
async function wakeUpLatencies(runtime: Runtime, rx: Receiver, app: string, path: string) {
  const out: number[] = [];
  for (let i = 0; i < 8; i++) {
    const before = rx.on(`/${path}`).length;
    const sent = Date.now();
    const res = await api(runtime, "POST", `/app/${app}/msg`, {
      eventType: "latency.probe",
      payload: { i },
    });
    expect(res.status).toBe(202);
    await waitFor(() => rx.on(`/${path}`).length > before, 10_000, "the probe's delivery");
    out.push(rx.on(`/${path}`).at(-1)!.at - sent);
    await new Promise((r) => setTimeout(r, 137)); // not in step with the poll
  }
  return out;
}

describe.skipIf(missing)("through PgBouncer in transaction mode", () => {
  test("detection: the pooled URL is a transaction pooler, PostgreSQL itself is direct, a setting overrides", async () => {
    expect((await detectPooler(db.pooledUrl, "auto", "DATABASE_URL")).mode).toBe("transaction");
    expect((await detectPooler(db.directUrl, "auto", "DATABASE_URL")).mode).toBe("direct");
    expect(await detectPooler(db.directUrl, "transaction", "DATABASE_URL")).toEqual({
      mode: "transaction",
      by: "setting",
    });
  });

  test("a pooler in statement mode is refused at start with one sentence", async () => {
    const url = await db.pooler("statement");
    const err = await start({ databaseUrl: url }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(HookRelayError);
    expect((err as Error).message).toMatch(
      /^DATABASE_URL reaches a connection pooler in statement mode, .*hookrelay needs session or transaction mode/,
    );
    expect((err as Error).message).not.toContain("\n");
  });

  test("a standby as DATABASE_URL, and a role without rights, are refused at start with one sentence", async () => {
    const refusal = (settings: { databaseUrl: string }) =>
      start(settings, { api: true, worker: true }).then(
        () => null,
        (e: unknown) => e as Error,
      );
    const standby = await refusal({ databaseUrl: await db.standby() });
    expect(standby).toBeInstanceOf(HookRelayError);
    expect(standby?.message).toMatch(
      /^DATABASE_URL reaches a read-only standby \(pg_is_in_recovery\(\) is true\)/,
    );

    const admin = new pg.Client(db.directUrl);
    await admin.connect();
    await admin.query("create role no_rights login password 'no-rights'");
    await admin.query("revoke connect on database hookrelay from public");
    await admin.end();
    const url = new URL(db.directUrl);
    url.username = "no_rights";
    url.password = "no-rights";
    const denied = await refusal({ databaseUrl: url.href });
    expect(denied).toBeInstanceOf(HookRelayError);
    expect(denied?.message).toMatch(
      /^the database role lacks a right hookrelay needs \(permission denied for database/,
    );
    for (const e of [standby, denied]) expect(e?.message).not.toContain("\n");
  }, 60_000);

  test("no direct URL: the start-up line says so; API calls, send() in the caller's transaction, and a worker outlasting its heartbeat threshold work with no error and no duplicate", async () => {
    const startedAt = Date.now();
    const { runtime, modeLine } = await start({ databaseUrl: db.pooledUrl });
    expect(modeLine).toMatch(
      /^database reached through a transaction pooler \(detected\); no direct URL/,
    );

    const slow = await startReceiver(() => ({ status: 200, delayMs: 3_000 }));
    receivers.push(slow);
    const app = await appWithEndpoint(runtime, slow, "slow");

    // API: many concurrent calls, 0 errors (named statements broke 85% of them)
    const calls = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        i % 3 === 0
          ? api(runtime, "GET", `/app/${app}`)
          : i % 3 === 1
            ? api(runtime, "GET", `/app/${app}/endpoint`)
            : api(runtime, "GET", "/app?limit=5"),
      ),
    );
    expect(calls.filter((c) => c.status !== 200).map((c) => [c.status, c.body])).toEqual([]);

    // A worker judges others' liveness JUDGE_AFTER_MS after it starts: the
    // deliveries below run after that, when a wrong judgement of its own would show.
    await new Promise((r) =>
      setTimeout(r, Math.max(0, JUDGE_AFTER_MS + 500 - (Date.now() - startedAt))),
    );

    // the library on the caller's own pooled clients, in the caller's transaction
    const callerPool = new pg.Pool({ connectionString: db.pooledUrl, max: 8 });
    const relay = new HookRelay({ pool: callerPool });
    const outcomes = await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const client = await callerPool.connect();
        try {
          await client.query("begin");
          await client.query("select 1"); // the caller's own business write
          await relay.send(
            app,
            { eventType: "outbox.test", payload: { i }, eventId: `tx-${i}` },
            { client },
          );
          await client.query(i % 2 === 0 ? "commit" : "rollback");
          return "ok";
        } catch (err) {
          await client.query("rollback").catch(() => undefined);
          return (err as Error).message;
        } finally {
          client.release();
        }
      }),
    );
    await callerPool.end();
    expect(outcomes.filter((o) => o !== "ok")).toEqual([]);
    const { rows } = await runtime.pool.query(
      "select count(*)::int as n from messages where event_type = 'outbox.test'",
    );
    expect(rows[0].n).toBe(20);

    // 20 committed messages to a 3 s endpoint (over the 2 s heartbeat threshold): exactly
    // one request each; a worker that handed its own live claims back sent them 5-6 times
    await waitFor(
      async () =>
        (
          await runtime.pool.query(
            "select count(*)::int as n from deliveries where status = 'delivered'",
          )
        ).rows[0].n === 20,
      30_000,
      "the 20 deliveries",
    );
    // nothing of ours lives on a pooled server session: no advisory lock, a heartbeat row,
    // which the worker still writes (it beats on after the last result)
    const direct = new pg.Client(db.directUrl);
    await direct.connect();
    const beatAt = async () =>
      (await direct.query("select max(beat_at) as at from worker_heartbeats")).rows[0].at as Date;
    const lastBeat = (await beatAt()).getTime();
    await waitFor(async () => (await beatAt()).getTime() > lastBeat, 10_000, "the next heartbeat");
    const locks = await direct.query(
      "select count(*)::int as n from pg_locks where locktype = 'advisory'",
    );
    const beats = await direct.query("select count(*)::int as n from worker_heartbeats");
    await direct.end();
    expect([locks.rows[0].n, beats.rows[0].n]).toEqual([0, 1]);
    const ids = slow.requests.map((r) => String(r.headers["webhook-id"]));
    expect(ids.length).toBe(20);
    expect(new Set(ids).size).toBe(20);
  }, 90_000);

  test("wake-up latency without and with HOOKRELAY_DATABASE_DIRECT_URL (printed, not asserted)", async () => {
    const rx = await startReceiver();
    receivers.push(rx);
    for (const r of runtimes.splice(0)) await r.stop();
    const polled = await start({ databaseUrl: db.pooledUrl });
    const app = await appWithEndpoint(polled.runtime, rx, "polled");
    const withoutDirect = await wakeUpLatencies(polled.runtime, rx, app, "polled");
    await polled.runtime.stop();

    const direct = await start({ databaseUrl: db.pooledUrl, databaseDirectUrl: db.directUrl });
    expect(direct.modeLine).toMatch(
      /^database reached through a transaction pooler \(detected\): .*HOOKRELAY_DATABASE_DIRECT_URL/,
    );
    const app2 = await appWithEndpoint(direct.runtime, rx, "listened");
    const withDirect = await wakeUpLatencies(direct.runtime, rx, app2, "listened");
    console.log(
      `wake-up latency through PgBouncer (202 to arrival, median of 8): polling ${median(withoutDirect)} ms [${withoutDirect.join(", ")}]; with the direct URL (LISTEN) ${median(withDirect)} ms [${withDirect.join(", ")}]`,
    );
    const plain = await start({ databaseUrl: db.directUrl }, { api: false, worker: false });
    expect(plain.modeLine).toMatch(/^database reached direct \(detected\)/);
  }, 90_000);

  test("a SIGKILLed worker's claims are handed back by heartbeat, through the pooler", async () => {
    for (const r of runtimes.splice(0)) await r.stop();
    const holding = await startReceiver(() => ({ hang: true }));
    receivers.push(holding);
    const { runtime } = await start({ databaseUrl: db.pooledUrl }, { api: true, worker: false });
    const app = await appWithEndpoint(runtime, holding, "held");
    const env = {
      HOOKRELAY_HEARTBEAT_STALE_MS: "2000",
      HOOKRELAY_LIVENESS_JUDGE_AFTER_MS: String(JUDGE_AFTER_MS),
      HOOKRELAY_TIMEOUT_MS: "60000",
      HOOKRELAY_LOG_LEVEL: "info",
      // five requests held at once: an adaptive limit starts at one and only grows on answers
      HOOKRELAY_ADAPTIVE_CONCURRENCY: "off",
    };
    const [doomed] = (await startWorkers(1, db.pooledUrl, env)) as [HookrelayProcess];
    expect(doomed.stdout).toMatch(/transaction pooler \(detected\); no direct URL/);
    for (let i = 0; i < 5; i++) {
      expect(
        (await api(runtime, "POST", `/app/${app}/msg`, { eventType: "held", payload: { i } }))
          .status,
      ).toBe(202);
    }
    await waitFor(() => holding.requests.length === 5, 15_000, "the doomed worker's 5 requests");
    const [survivor] = (await startWorkers(1, db.pooledUrl, env)) as [HookrelayProcess];
    // the survivor judges others after JUDGE_AFTER_MS
    await new Promise((r) => setTimeout(r, JUDGE_AFTER_MS + 500));
    expect(holding.requests.length).toBe(5);
    const killedAt = Date.now();
    process.kill(doomed.pid, "SIGKILL");
    await waitFor(() => holding.requests.length === 10, 30_000, "the 5 handed back");
    const ms = holding.requests.slice(5).map((r) => r.at - killedAt);
    console.log(
      `heartbeat hand-back (stale ${env.HOOKRELAY_HEARTBEAT_STALE_MS} ms): SIGKILL to redelivery ${Math.min(...ms)}-${Math.max(...ms)} ms`,
    );
    const ids = holding.requests.map((r) => String(r.headers["webhook-id"]));
    expect(new Set(ids.slice(5))).toEqual(new Set(ids.slice(0, 5)));
    process.kill(survivor.pid, "SIGKILL");
  }, 120_000);
});
