/**
 * `npm run faults`: the fault suite (docs/reliability.md). On its own PostgreSQL and a
 * receiver on 127.0.0.1 it runs one API process and N worker processes, sends M messages
 * that fan out to E endpoints through the API while one worker is SIGKILLed (and replaced)
 * every K seconds and PostgreSQL is stopped and started once, then lets everything settle
 * and counts per delivery what was lost, duplicated, how long the drain took, how long a
 * killed worker's deliveries took to go out again, and whether any process exited by
 * itself. Exit code 1 when a delivery was lost, a process exited on its own or the API
 * answered 500; 2 when the run itself failed.
 */
import { monitorEventLoopDelay } from "node:perf_hooks";
import { withClient } from "../src/db/short-client.ts";
import { generateApiKey } from "../src/security/api-key-format.ts";
import { type RestartableCluster, startRestartableCluster } from "./lib/cluster.ts";
import { guardRun } from "./lib/guard-run.ts";
import { sendMessages } from "./lib/load.ts";
import { parseFaultOptions } from "./lib/options.ts";
import { makeProcessSet, type Proc, type ProcessSet } from "./lib/processes.ts";
import { type FaultReceiver, startFaultReceiver } from "./lib/receiver.ts";
import {
  computeFigures,
  detailsText,
  figuresTable,
  type Kill,
  type RunFacts,
} from "./lib/report.ts";
import { createApp, finishRun } from "./lib/scenario.ts";

const opts = parseFaultOptions(process.argv.slice(2));
const log = (line: string) =>
  process.stderr.write(`faults ${new Date().toISOString().slice(11, 19)} ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// The receiver, the producers and the kill schedule share this process: on a crowded
// machine its event loop lags, and every time it takes is that much coarser.
const loopDelay = monitorEventLoopDelay({ resolution: 20 });
loopDelay.enable();

let cluster: RestartableCluster | null = null;
let receiver: FaultReceiver | null = null;
let procs: ProcessSet | null = null;

async function cleanup(): Promise<void> {
  await procs?.killAll().catch(() => undefined);
  await receiver?.close().catch(() => undefined);
  await cluster?.destroy().catch(() => undefined);
}

guardRun({ watchdogSeconds: opts.watchdogSeconds, log, cleanup });

/** Where the undelivered deliveries are (printed when the run did not settle). */
async function databaseState(url: string): Promise<string> {
  return withClient({ connectionString: url }, async (client) => {
    const states = await client.query(
      `select status, count(*)::int as n, min(next_attempt_at) as next from deliveries
       where status <> 'delivered' group by status`,
    );
    const health = await client.query(
      `select h.endpoint_id, h.circuit_state, h.consecutive_failures,
              c.claimed - h.released as in_flight, h.open_until, h.paused_until
       from endpoint_health h join endpoint_claim_state c on c.endpoint_id = h.endpoint_id
       order by h.endpoint_id`,
    );
    const claims = await client.query(
      "select count(*)::int as n, min(lease_expires_at) as first from claims",
    );
    return [
      ...states.rows.map((r) => JSON.stringify(r)),
      ...health.rows.map((r) => JSON.stringify(r)),
      `claims ${JSON.stringify(claims.rows[0])}`,
    ].join("\n");
  }).catch((err: Error) => `(not readable: ${err.message})`);
}

async function run(): Promise<RunFacts> {
  log(
    `${opts.size}: ${opts.workers} workers, ${opts.messages} messages x ${opts.endpoints} endpoints, ` +
      `${opts.churnSeconds} s churn, a kill every ${opts.killEverySeconds} s, PostgreSQL down ${opts.pgDownSeconds} s`,
  );
  cluster = await startRestartableCluster();
  receiver = await startFaultReceiver(opts.endpoints, {
    failEvery: opts.failEvery,
    holdEvery: opts.holdEvery,
    holdMs: opts.holdMs,
  });
  const key = generateApiKey("admin");
  procs = makeProcessSet({
    DATABASE_URL: cluster.url,
    HOOKRELAY_ADMIN_KEY: key,
    HOOKRELAY_LOG_LEVEL: "warn",
    HOOKRELAY_HOST: "127.0.0.1",
    HOOKRELAY_PORT: "0",
    HOOKRELAY_SSRF_ALLOWLIST: "127.0.0.1",
    HOOKRELAY_TIMEOUT_MS: String(opts.timeoutMs),
    HOOKRELAY_LEASE_MARGIN_MS: String(opts.leaseMarginMs),
    // the suite measures faults, not the retry schedule: 503s come back within seconds
    HOOKRELAY_RETRY_BASE_MS: "200",
    HOOKRELAY_RETRY_CAP_MS: "2000",
    HOOKRELAY_POLL_INTERVAL_MS: "250",
    HOOKRELAY_DB_POOL_SIZE: "6",
  });
  const apiProc = procs.start("api");
  const apiUrl = await apiProc.ready;
  const appId = await createApp(apiUrl, key, "faults", receiver.urls);
  const workers: Proc[] = Array.from({ length: opts.workers }, () => procs!.start("worker"));
  await Promise.all(workers.map((w) => w.ready));
  log(`API at ${apiUrl}, ${opts.workers} workers running; churn starts`);

  const churnMs = opts.churnSeconds * 1_000;
  const churnStart = Date.now();
  const churnEnd = churnStart + churnMs;
  const load = sendMessages({
    apiUrl,
    key,
    appId,
    messages: opts.messages,
    durationMs: churnMs,
    concurrency: 16,
    giveUpAt: churnEnd + opts.settleSeconds * 1_000,
  });

  const kills: Kill[] = [];
  const killer = (async () => {
    let victim = 0;
    for (
      let at = churnStart + opts.killEverySeconds * 1_000;
      at < churnEnd;
      at += opts.killEverySeconds * 1_000
    ) {
      await sleep(at - Date.now());
      const i = victim++ % workers.length;
      const w = workers[i]!;
      kills.push({ at: Date.now(), pid: w.pid });
      procs!.kill(w);
      workers[i] = procs!.start("worker");
    }
  })();

  let pg: RunFacts["pg"] = null;
  const outage = (async () => {
    if (opts.pgDownSeconds <= 0) return;
    await sleep(churnStart + churnMs / 2 - Date.now());
    const stoppedAt = Date.now();
    await cluster!.stop();
    log("PostgreSQL stopped");
    const probe = await fetch(`${apiUrl}/healthz`).then(
      async (r) => `${r.status} ${((await r.json()) as { database?: string }).database ?? "?"}`,
      (err: Error) => `no answer: ${err.message}`,
    );
    await sleep(stoppedAt + opts.pgDownSeconds * 1_000 - Date.now());
    await cluster!.start();
    pg = { stoppedAt, startedAt: Date.now(), healthz: probe };
    log("PostgreSQL started again");
  })();

  await Promise.all([killer, outage]);
  const sent = await load;
  const churnEndedAt = Math.max(Date.now(), churnEnd);
  log(`churn over: ${sent.accepted.length} messages accepted, ${kills.length} kills; settling`);

  const expected = sent.accepted.length * opts.endpoints;
  const ids = new Set(sent.accepted);
  const settleBy = churnEndedAt + opts.settleSeconds * 1_000;
  let settledAt: number | null = null;
  while (Date.now() < settleBy) {
    let have = 0;
    for (const k of receiver.delivered.keys()) if (ids.has(k.slice(0, k.lastIndexOf("|")))) have++;
    if (have >= expected) {
      settledAt = Math.max(...receiver.arrivals.filter((a) => a.status === 200).map((a) => a.at));
      break;
    }
    await sleep(100);
  }
  // a moment more for late duplicates, then every process must still be running
  await sleep(1_000);
  if (settledAt === null)
    log(`not settled; the database says:\n${await databaseState(cluster.url)}`);
  const selfExits = [...procs.selfExits];
  return {
    endpoints: opts.endpoints,
    load: sent,
    receiver,
    kills,
    selfExits,
    churnEndedAt,
    settledAt,
    pg,
  };
}

try {
  const facts = await run();
  const figures = computeFigures(facts);
  await cleanup();
  process.stdout.write(`\nhookrelay fault suite (${opts.size})\n\n${figuresTable(figures)}\n`);
  process.stdout.write(
    `\n(the suite's own event loop lagged up to ${Math.round(loopDelay.max / 1e6)} ms, p99 ${Math.round(loopDelay.percentile(99) / 1e6)} ms: its times are that coarse)\n`,
  );
  if (opts.details) process.stdout.write(`\n${detailsText(facts)}\n`);
  finishRun(facts, figures);
} catch (err) {
  log(`run failed: ${(err as Error).stack ?? String(err)}`);
  await cleanup();
  process.exit(2);
}
