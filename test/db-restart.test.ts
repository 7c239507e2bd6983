/**
 * PostgreSQL stopped and started under load (docs/reliability.md), on a cluster of this
 * file's own (the suite's shared one must stay up), with a real API process, two worker
 * processes and a receiver on 127.0.0.1. While the database is down the API answers sends
 * 503 with Retry-After and the code database_unavailable, never 500 and never 202, and
 * /healthz says the database is unreachable. After it is back every accepted message
 * reaches every endpoint, every delivery ends `delivered`, and no process has exited.
 * The second test takes the in-process parts one by one: a pool with a client checked
 * out, the LISTEN connection and the maintenance runner.
 */

import pino from "pino";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type RestartableCluster, startRestartableCluster } from "../faults/lib/cluster.ts";
import { makePool } from "../src/db/pool.ts";
import { WORK_CHANNEL } from "../src/db/work-channel.ts";
import { makeMaintenance } from "../src/ops/maintenance.ts";
import { generateApiKey } from "../src/security/api-key-format.ts";
import { makeWorkListener } from "../src/worker/work-listener.ts";
import {
  type HookrelayProcess,
  isRunning,
  killAll,
  spawnHookrelay,
  startWorkers,
  workerEnv,
} from "./helpers/processes.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const ENDPOINTS = 3;
const KEY = generateApiKey("admin");
let cluster: RestartableCluster;
let rx: Receiver;
let apiProc: HookrelayProcess;
let apiUrl: string;
let workers: HookrelayProcess[];

beforeAll(async () => {
  cluster = await startRestartableCluster();
  // a short delay: results are being written when the database goes away
  rx = await startReceiver(() => ({ status: 200, delayMs: 50 }));
  const env = workerEnv(cluster.url, {
    HOOKRELAY_ADMIN_KEY: KEY,
    HOOKRELAY_TIMEOUT_MS: "5000",
    HOOKRELAY_LEASE_MARGIN_MS: "5000",
  });
  apiProc = spawnHookrelay(["api"], { ...env, HOOKRELAY_PORT: "0" });
  await waitFor(() => {
    if (!isRunning(apiProc)) throw new Error(`api exited:\n${apiProc.stdout}\n${apiProc.stderr}`);
    return /API listening on http:\/\/\S+/.test(apiProc.stdout);
  }, 40_000);
  apiUrl = /API listening on (http:\/\/\S+)/.exec(apiProc.stdout)![1]!;
  workers = await startWorkers(2, cluster.url, env);
}, 120_000);

afterAll(async () => {
  await killAll();
  await rx?.close();
  await cluster?.destroy();
});

interface Answer {
  status: number;
  retryAfter: string | null;
  body: { id?: string; code?: string };
  startedAt: number;
}

async function call(method: string, path: string, body?: unknown): Promise<Answer> {
  const startedAt = Date.now();
  const res = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: text ? JSON.parse(text) : {},
    startedAt,
  };
}

test("a PostgreSQL restart under load: 503 + Retry-After meanwhile, then everything accepted is delivered and no process exits", {
  timeout: 150_000,
}, async () => {
  const app = await call("POST", "/api/v1/app", { name: "restart" });
  for (let i = 0; i < ENDPOINTS; i++) {
    const ep = await call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
      url: `${rx.url}/e/${i}`,
    });
    expect(ep.status).toBe(201);
  }

  // Load: 8 producers, each sending until its message is accepted (retrying 503s).
  const answers: Answer[] = [];
  const accepted: string[] = [];
  let producing = true;
  let n = 0;
  const producer = async () => {
    while (producing) {
      const eventId = `restart-${n++}`;
      for (;;) {
        const a = await call("POST", `/api/v1/app/${app.body.id}/msg`, {
          eventType: "restart.test",
          eventId,
          payload: { eventId },
        });
        answers.push(a);
        if (a.status === 202 || a.status === 200) {
          accepted.push(a.body.id!);
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const load = Promise.all(Array.from({ length: 8 }, producer));
  await waitFor(() => rx.requests.length >= 60, 30_000, "deliveries before the restart");

  await cluster.stop();
  const down = Date.now();
  // every send that starts while the database is down is refused, with the same answer
  const refused = await Promise.all(
    Array.from({ length: 5 }, () =>
      call("POST", `/api/v1/app/${app.body.id}/msg`, { eventType: "restart.test", payload: {} }),
    ),
  );
  for (const a of refused) {
    expect(a.status).toBe(503);
    expect(a.body.code).toBe("database_unavailable");
    expect(a.retryAfter).toMatch(/^\d+$/);
  }
  const health = await fetch(`${apiUrl}/healthz`);
  expect(health.status).toBe(503);
  expect(health.headers.get("retry-after")).toMatch(/^\d+$/);
  expect(await health.json()).toMatchObject({ status: "unavailable", database: "unreachable" });
  // the producers keep sending into the outage and are refused
  const refusedSince = (t: number) => answers.filter((a) => a.startedAt > t && a.status === 503);
  await waitFor(() => refusedSince(down).length >= 16, 30_000, "the producers' refused sends");
  const up = Date.now();
  await cluster.start();

  await waitFor(async () => (await fetch(`${apiUrl}/healthz`)).status === 200, 30_000, "healthz");
  // and get through again once it is back
  const acceptedSince = (t: number) => answers.filter((a) => a.startedAt > t && a.status === 202);
  await waitFor(() => acceptedSince(up).length >= 16, 30_000, "sends accepted after the restart");
  producing = false;
  await load;

  // during the outage: 503s only; overall: never a 500
  const during = answers.filter((a) => a.startedAt > down && a.startedAt < up);
  expect(during.length).toBeGreaterThan(0);
  for (const a of during) expect([a.status, a.body.code]).toEqual([503, "database_unavailable"]);
  expect(answers.filter((a) => a.status >= 500 && a.status !== 503)).toEqual([]);

  // every accepted message reaches every endpoint, and every delivery ends delivered
  const arrived = () => {
    const keys = new Set(rx.requests.map((r) => `${r.headers["webhook-id"]}|${r.path}`));
    return accepted.every((id) =>
      Array.from({ length: ENDPOINTS }, (_, i) => `${id}|/e/${i}`).every((k) => keys.has(k)),
    );
  };
  await waitFor(arrived, 60_000, "every accepted delivery at the receiver");
  const pool = makePool({ connectionString: cluster.url, max: 1 });
  try {
    await waitFor(
      async () => {
        const { rows } = await pool.query(
          `select count(*)::int as n from deliveries
           where message_id = any($1::text[]) and status = 'delivered'`,
          [accepted],
        );
        return rows[0].n === accepted.length * ENDPOINTS;
      },
      60_000,
      "every delivery to be recorded delivered",
    );
  } finally {
    await pool.end();
  }

  for (const p of [apiProc, ...workers])
    expect(isRunning(p), `${p.pid} exited:\n${p.stdout}\n${p.stderr}`).toBe(true);
});

/** What the in-process parts log when they meet an outage. */
const OUTAGE_SEEN = [
  /^work listener connection lost/,
  /^work listener reconnect failed/,
  /^maintenance (tick|task) failed/,
];

test("in process: a checked-out pool client, the LISTEN connection and maintenance get through a restart", {
  timeout: 90_000,
}, async () => {
  // the log lines' messages: the parts say when they meet the outage
  const logged: string[] = [];
  const logger = pino(
    { level: "info" },
    { write: (line: string) => logged.push(String(JSON.parse(line).msg)) },
  );
  const pool = makePool({ connectionString: cluster.url, max: 3, logger });
  // held across the restart, as the maintenance lock is: its loss must not throw
  const held = await pool.connect();
  let woken = 0;
  const listener = makeWorkListener({
    connectionString: cluster.url,
    onWork: () => woken++,
    logger,
    reconnect: { baseMs: 50, capMs: 500 },
  });
  let ticks = 0;
  const maintenance = makeMaintenance({
    pool,
    logger,
    intervalMs: 50,
    tasks: [
      {
        name: "count",
        run: async (p) => {
          await p.query("select 1");
          ticks++;
        },
      },
    ],
  });
  try {
    await listener.start();
    maintenance.start();
    await waitFor(() => ticks > 0, 10_000, "a maintenance tick");
    logged.length = 0;

    await cluster.stop();
    // each part meets the outage before the database is back: the listener loses its
    // connection and fails to reconnect, a maintenance tick fails
    await waitFor(
      () => OUTAGE_SEEN.every((seen) => logged.some((msg) => seen.test(msg))),
      30_000,
      "the outage to reach the listener and maintenance",
    );
    await cluster.start();

    const ticksAfter = ticks;
    await waitFor(() => ticks > ticksAfter, 30_000, "maintenance to run again");
    // the listener is back: a NOTIFY reaches it (notified until one arrives)
    await waitFor(
      async () => {
        const before = woken;
        await pool.query(`select pg_notify('${WORK_CHANNEL}', '')`);
        await new Promise((r) => setTimeout(r, 100));
        return woken > before;
      },
      30_000,
      "a NOTIFY after the listener reconnected",
    );
    expect((await pool.query("select 1 as one")).rows[0].one).toBe(1);
  } finally {
    held.release();
    await maintenance.stop();
    await listener.stop();
    await pool.end();
  }
});

test("a worker started while the database is down waits for it, then runs", {
  timeout: 90_000,
}, async () => {
  await cluster.stop();
  const late = spawnHookrelay(
    ["worker"],
    workerEnv(cluster.url, { HOOKRELAY_DB_STARTUP_WAIT_MS: "60000" }),
  );
  try {
    await waitFor(
      () => /database unreachable at start; waiting for it/.test(late.stdout + late.stderr),
      30_000,
      "the worker to say it waits",
    );
    expect(isRunning(late)).toBe(true);
  } finally {
    await cluster.start();
  }
  await waitFor(
    () => {
      if (!isRunning(late)) throw new Error(`worker exited:\n${late.stdout}\n${late.stderr}`);
      return /hookrelay worker \S+ running/.test(late.stdout);
    },
    60_000,
    "the worker to run once the database is back",
  );
});
