/**
 * `npm run faults -- --scenario failover`: a real failover under load (docs/reliability.md,
 * Failover (Patroni)). On 127.0.0.1 it runs a two-node HA PostgreSQL of Debian's packages
 * (Patroni over one etcd member, synchronous replication, haproxy routing to the primary:
 * faults/lib/ha-cluster.ts), one `hookrelay api` and N `hookrelay worker` processes whose
 * DATABASE_URL goes through haproxy, and the fault receiver. While producers send messages
 * that fan out to every endpoint, the primary's postmaster is SIGKILLed; Patroni promotes
 * the synchronous standby and hookrelay must ride through with no process restarted.
 * Exit code 1 when a delivery was lost, a process exited on its own or the API answered
 * 500; 2 when the run itself failed.
 */
import { migrate } from "../src/db/migrate.ts";
import { makePool } from "../src/db/pool.ts";
import { withClient } from "../src/db/short-client.ts";
import { generateApiKey } from "../src/security/api-key-format.ts";
import { parseFailoverOptions } from "./lib/failover-options.ts";
import {
  computeFailoverFigures,
  type FailoverFacts,
  failoverTable,
} from "./lib/failover-report.ts";
import { guardRun } from "./lib/guard-run.ts";
import { type HaCluster, startHaCluster } from "./lib/ha-cluster.ts";
import { FAST_PATRONI } from "./lib/ha-config.ts";
import { ensureHaPackages } from "./lib/ha-packages.ts";
import { sendMessages } from "./lib/load.ts";
import { makeProcessSet, type Proc, type ProcessSet } from "./lib/processes.ts";
import { type FaultReceiver, startFaultReceiver } from "./lib/receiver.ts";
import { createApp, finishRun } from "./lib/scenario.ts";

const opts = parseFailoverOptions(process.argv.slice(2));
const log = (line: string) =>
  process.stderr.write(`failover ${new Date().toISOString().slice(11, 19)} ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const DATABASE = "hookrelay_faults";

let cluster = null as HaCluster | null;
let receiver: FaultReceiver | null = null;
let procs: ProcessSet | null = null;
const started: Proc[] = [];

async function cleanup(): Promise<void> {
  await procs?.killAll().catch(() => undefined);
  await receiver?.close().catch(() => undefined);
  await cluster?.destroy().catch((err: Error) => log(`cleanup: ${err.message}`));
}

guardRun({
  watchdogSeconds: opts.watchdogSeconds,
  log,
  cleanup,
  beforeGivingUp: async () => {
    if (cluster) log(`the HA cluster's logs:\n${await cluster.logTails(20)}`);
  },
});

/** The database hookrelay uses, created through haproxy and migrated. */
async function prepareDatabase(c: HaCluster): Promise<string> {
  await withClient({ connectionString: c.url("postgres") }, (admin) =>
    admin.query(`create database ${DATABASE}`),
  );
  const pool = makePool({ connectionString: c.url(DATABASE), max: 2 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  return c.url(DATABASE);
}

async function run(): Promise<FailoverFacts> {
  const installed = await ensureHaPackages(log);
  if (installed.length > 0) log(`installed ${installed.join(" ")}`);
  const p = FAST_PATRONI;
  log(
    `${opts.size}: ${opts.workers} workers, ${opts.messages} messages x ${opts.endpoints} endpoints over ${opts.loadSeconds} s, ` +
      `the primary killed at ${opts.killAtSeconds} s; Patroni ttl ${p.ttl} s, loop_wait ${p.loopWait} s, retry_timeout ${p.retryTimeout} s`,
  );
  const t0 = Date.now();
  cluster = await startHaCluster(p, log);
  const url = await prepareDatabase(cluster);
  log(
    `HA PostgreSQL up in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${url.replace(/:[^:@/]+@/, ":***@")}`,
  );

  receiver = await startFaultReceiver(opts.endpoints, {
    failEvery: opts.failEvery,
    holdEvery: 0,
    holdMs: 0,
  });
  const key = generateApiKey("admin");
  procs = makeProcessSet({
    DATABASE_URL: url,
    HOOKRELAY_ADMIN_KEY: key,
    HOOKRELAY_LOG_LEVEL: "warn",
    HOOKRELAY_HOST: "127.0.0.1",
    HOOKRELAY_PORT: "0",
    HOOKRELAY_SSRF_ALLOWLIST: "127.0.0.1",
    // the scenario measures the failover, not the retry schedule
    HOOKRELAY_RETRY_BASE_MS: "200",
    HOOKRELAY_RETRY_CAP_MS: "2000",
    HOOKRELAY_POLL_INTERVAL_MS: "250",
    HOOKRELAY_DB_POOL_SIZE: "6",
  });
  const apiProc = procs.start("api");
  started.push(apiProc);
  const apiUrl = await apiProc.ready;
  const appId = await createApp(apiUrl, key, "failover", receiver.urls);
  for (let i = 0; i < opts.workers; i++) started.push(procs.start("worker"));
  await Promise.all(started.map((w) => w.ready));
  log(`API at ${apiUrl}, ${opts.workers} workers running; load starts`);

  const loadStart = Date.now();
  const loadEnd = loadStart + opts.loadSeconds * 1_000;
  const load = sendMessages({
    apiUrl,
    key,
    appId,
    messages: opts.messages,
    durationMs: opts.loadSeconds * 1_000,
    concurrency: 16,
    giveUpAt: loadEnd + opts.settleSeconds * 1_000,
  });

  await sleep(loadStart + opts.killAtSeconds * 1_000 - Date.now());
  const c = cluster;
  const leader = (await c.members()).find((m) => m.role === "leader");
  const node = c.nodes.find((n) => n.name === leader?.name);
  if (!node) throw new Error("no leader to kill");
  const pid = await c.postmasterPid(node);
  const killedAt = Date.now();
  process.kill(pid, "SIGKILL");
  log(`SIGKILLed the postmaster (${pid}) of the primary ${node.name}`);

  let promotedAt: number | null = null;
  let newPrimary: string | null = null;
  let rejoinedAt: number | null = null;
  let watching = true;
  const watcher = (async () => {
    while (watching && rejoinedAt === null) {
      const members = await c.members();
      const now = Date.now();
      const next = members.find((m) => m.role === "leader" && m.name !== node.name);
      if (promotedAt === null && next) {
        promotedAt = now;
        newPrimary = next.name;
        log(`Patroni: ${next.name} leads`);
      }
      if (
        promotedAt !== null &&
        members.some((m) => m.name === node.name && m.role === "sync_standby")
      )
        rejoinedAt = now;
      await sleep(200);
    }
  })();

  const sent = await load;
  const loadEndedAt = Math.max(Date.now(), loadEnd);
  log(`load over: ${sent.accepted.length} messages accepted; settling`);
  const expected = sent.accepted.length * opts.endpoints;
  const ids = new Set(sent.accepted);
  let settledAt: number | null = null;
  while (Date.now() < loadEndedAt + opts.settleSeconds * 1_000) {
    let have = 0;
    for (const k of receiver.delivered.keys()) if (ids.has(k.slice(0, k.lastIndexOf("|")))) have++;
    if (have >= expected) {
      settledAt = Math.max(...receiver.arrivals.filter((a) => a.status === 200).map((a) => a.at));
      break;
    }
    await sleep(100);
  }
  // a moment more for late duplicates (and the old primary's return), then every process
  // must still be running
  const lateUntil = Date.now() + 2_000;
  while (Date.now() < lateUntil || (rejoinedAt === null && Date.now() < lateUntil + 15_000))
    await sleep(200);
  watching = false;
  await watcher;
  return {
    endpoints: opts.endpoints,
    load: sent,
    receiver,
    selfExits: [...procs.selfExits],
    killedAt,
    oldPrimary: node.name,
    promotedAt,
    newPrimary,
    rejoinedAt,
    loadEndedAt,
    settledAt,
  };
}

try {
  const facts = await run();
  const figures = computeFailoverFigures(facts);
  const details = opts.details
    ? `${started.map((p) => `--- hookrelay ${p.role} ${p.pid}\n${p.tail()}`).join("\n")}\n${await cluster?.logTails(20)}`
        .split("\n")
        .map((line) => (line.length > 240 ? `${line.slice(0, 240)}...` : line))
        .join("\n")
    : "";
  await cleanup();
  process.stdout.write(
    `\nhookrelay failover scenario (${opts.size})\n\n${failoverTable(figures)}\n`,
  );
  if (details) process.stdout.write(`\n${details}\n`);
  finishRun(facts, figures);
} catch (err) {
  log(`run failed: ${(err as Error).stack ?? String(err)}`);
  if (cluster) log(`the HA cluster's logs:\n${await cluster.logTails(20)}`);
  await cleanup();
  process.exit(2);
}
