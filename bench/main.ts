/**
 * `npm run bench`: starts its own PostgreSQL and receiver, runs scenarios 1-13 of the
 * performance issue `--runs` times (default 3), prints the medians as a table and writes
 * everything to bench/results/<timestamp>.json. See docs/performance.md.
 *
 * One run measures every scenario in order, so each comparison (hookrelay / ceiling,
 * hookrelay / pg-boss, isolation / throughput, large / small backlog) is a ratio of two
 * figures taken minutes apart under the same conditions.
 */
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { guardRun } from "../faults/lib/guard-run.ts";
import {
  type Cluster,
  resetStatements,
  type StatementStat,
  startCluster,
  topStatements,
} from "./lib/cluster.ts";
import { makeContext } from "./lib/context.ts";
import { parseOptions } from "./lib/options.ts";
import { killAllChildren, profiling, quickEnv, REPO_ROOT } from "./lib/procs.ts";
import { type ReceiverControl, startReceiver } from "./lib/receiver.ts";
import { figures, type RunResult, table } from "./lib/report.ts";
import { runAdaptive } from "./scenarios/adaptive.ts";
import { type Backlog, dropBacklog, measureBacklog, prepareBacklog } from "./scenarios/backlog.ts";
import { runBrokers } from "./scenarios/brokers.ts";
import { runCeiling } from "./scenarios/ceiling.ts";
import { type DashboardData, measureDashboard, prepareDashboard } from "./scenarios/dashboard.ts";
import { runDelivery } from "./scenarios/delivery.ts";
import { runEgress } from "./scenarios/egress.ts";
import { type HistoryData, measureHistory, prepareHistory } from "./scenarios/history.ts";
import { runIngest } from "./scenarios/ingest.ts";
import { runLatency } from "./scenarios/latency.ts";
import { runOrdered } from "./scenarios/ordered.ts";
import { runPgBoss } from "./scenarios/pgboss.ts";
import { sweepPgBoss } from "./scenarios/pgboss-sweep.ts";
import { dropReplay, measureReplay, prepareReplay, type ReplayData } from "./scenarios/replay.ts";
import { runSoak } from "./scenarios/soak.ts";
import { measureSteady } from "./scenarios/steady.ts";
import { prepareSteadyHistory, type SteadyHistory } from "./scenarios/steady-history.ts";
import { runTracing } from "./scenarios/tracing.ts";

const opts = parseOptions(process.argv.slice(2));
const startedAt = new Date();
const loadAtStart = os.loadavg();
let cluster: Cluster | null = null;
let receiver: ReceiverControl | null = null;

async function cleanup(): Promise<void> {
  await receiver?.stop().catch(() => undefined);
  killAllChildren();
  await cluster?.stop().catch(() => undefined);
}

guardRun({
  watchdogSeconds: opts.watchdogMs / 1_000,
  log: (line) => process.stderr.write(`bench: ${line}\n`),
  cleanup,
});

/** --settle-load: waits until the machine's 1-minute load average is down to it, bounded. */
async function settle(label: string): Promise<void> {
  if (opts.settleLoad === null) return;
  const until = Date.now() + opts.settleMaxMs;
  let said = false;
  while (os.loadavg()[0]! > opts.settleLoad && Date.now() < until) {
    if (!said)
      process.stderr.write(
        `bench: ${label} waits for the load average (${os.loadavg()[0]!.toFixed(2)}) to fall to ${opts.settleLoad}\n`,
      );
    said = true;
    await new Promise((r) => setTimeout(r, 5_000));
  }
  if (said)
    process.stderr.write(
      `bench: ${label} starts at load ${os.loadavg()[0]!.toFixed(2)}${os.loadavg()[0]! > opts.settleLoad ? " (waited its longest)" : ""}\n`,
    );
}

async function main(): Promise<void> {
  if (loadAtStart[0]! > 1) {
    process.stderr.write(
      `bench: note: load average ${loadAtStart.map((l) => l.toFixed(2)).join(" ")} on ${os.cpus().length} cores; figures will be lower than on an idle machine\n`,
    );
  }
  if (opts.cpuProf) {
    profiling.dir = path.join(REPO_ROOT, "bench/results/profiles");
    await mkdir(profiling.dir, { recursive: true });
  }
  // 3 connections a process, not 10: every backend is a fork and a cold catalog cache
  if (opts.quick) quickEnv.HOOKRELAY_DB_POOL_SIZE = "3";
  cluster = await startCluster(opts.pgSettings);
  receiver = await startReceiver(opts.endpoints);
  const ctx = makeContext(opts, cluster, receiver);
  ctx.log(`PostgreSQL and receiver (${receiver.urls.length} ports) up`);

  if (opts.tunePgBoss) {
    process.stdout.write(`${await sweepPgBoss(ctx)}\n`);
    return;
  }

  const { only } = opts;
  let backlog: Backlog | null = null;
  let dashboard: DashboardData | null = null;
  let replay: ReplayData | null = null;
  let history: HistoryData | null = null;
  let steady: SteadyHistory | null = null;
  const runs: RunResult[] = [];
  // pg_stat_statements per scenario of the first run: which statements dominate.
  const statements: Record<string, StatementStat[]> = {};
  try {
    if (only.has(8)) {
      ctx.log(
        `8 backlog: seeding ${opts.backlogSmall} and ${opts.backlogLarge} pending deliveries`,
      );
      backlog = await prepareBacklog(ctx);
    }
    if (only.has(11)) {
      ctx.log("11 dashboard: seeding endpoints, deliveries and a day of attempts at 100/s");
      dashboard = await prepareDashboard(ctx);
      ctx.log(
        `11 dashboard: seeded in ${Math.round(dashboard.seedMs)} ms, rolled up in ${Math.round(dashboard.rollupMs)} ms`,
      );
    }
    if (only.has(12)) {
      ctx.log(`12 replay: seeding ${opts.replayRows} delivered deliveries of one endpoint`);
      replay = await prepareReplay(ctx);
      ctx.log(`12 replay: seeded in ${Math.round(replay.seedMs)} ms`);
    }
    if (only.has(16)) {
      ctx.log(
        `16 history: seeding ${opts.historyAttempts} attempts over ${opts.historyDays} days, partitioned and not`,
      );
      history = await prepareHistory(ctx);
      ctx.log(`16 history: seeded in ${Math.round(history.seedMs)} ms`);
    }
    if (only.has(19)) {
      ctx.log(
        `19 steady: seeding ${opts.steadyMessages} messages and ${opts.steadyAttempts} attempts over ${opts.steadyDays} days`,
      );
      steady = await prepareSteadyHistory(ctx);
      ctx.log(
        `19 steady: seeded: ${JSON.stringify(steady.seed)}, sizes ${JSON.stringify(steady.sizes)}`,
      );
    }
    for (let run = 1; run <= opts.runs; run++) {
      const r: RunResult = {};
      const step = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
        await settle(label);
        ctx.log(`run ${run}/${opts.runs}: ${label}`);
        if (run > 1) return fn();
        await resetStatements(ctx.cluster);
        const result = await fn();
        statements[label] = await topStatements(ctx.cluster);
        return result;
      };
      const n = opts.throughputMessages;
      if (only.has(1)) r.ceiling = await step("1 ceiling", () => runCeiling(ctx, n));
      if (only.has(2))
        r.pgboss = await step("2 peer (pg-boss)", () => runPgBoss(ctx, { messages: n }));
      if (only.has(3)) {
        r.hookrelay1 = await step("3 throughput, 1 worker", () =>
          runDelivery(ctx, { workers: 1, messages: n }),
        );
        r.hookrelay2 = await step("3 throughput, 2 workers", () =>
          runDelivery(ctx, { workers: 2, messages: n }),
        );
      }
      if (only.has(10)) {
        r.source1 = await step("10 throughput, 1 worker from the TypeScript source", () =>
          runDelivery(ctx, { workers: 1, messages: n, runtime: "source" }),
        );
      }
      if (only.has(4)) r.latency = await step("4 latency", () => runLatency(ctx));
      if (only.has(5)) r.ingest = await step("5 ingest", () => runIngest(ctx));
      if (only.has(6)) {
        const delayMs = opts.slowDelayMs;
        r.slowHookrelay = await step("6 slow receiver, hookrelay", () =>
          runDelivery(ctx, { workers: 1, messages: opts.slowMessages, delayMs }),
        );
        r.slowPgboss = await step("6 slow receiver, pg-boss", () =>
          runPgBoss(ctx, { messages: opts.slowMessages, delayMs }),
        );
      }
      if (only.has(7)) {
        const hanging = Array.from({ length: opts.isolationHanging }, (_, i) => i);
        r.isolation = await step("7 isolation", () =>
          runDelivery(ctx, {
            workers: 1,
            messages: opts.isolationMessages,
            hanging,
            timeoutMs: opts.isolationTimeoutMs,
          }),
        );
      }
      if (backlog) {
        const b = backlog;
        r.backlog = await step("8 backlog", () => measureBacklog(ctx, b));
      }
      if (dashboard) {
        const d = dashboard;
        r.dashboard = await step("11 dashboard", () => measureDashboard(ctx, d));
      }
      if (replay) {
        const d = replay;
        r.replay = await step("12 replay", () => measureReplay(ctx, d));
      }
      if (only.has(13)) r.ordered = await step("13 ordered", () => runOrdered(ctx));
      if (only.has(14)) r.adaptive = await step("14 adaptive", () => runAdaptive(ctx, run));
      if (only.has(15)) r.tracing = await step("15 tracing", () => runTracing(ctx, run));
      if (history) {
        const d = history;
        r.history = await step("16 history", () => measureHistory(ctx, d));
      }
      if (only.has(17)) r.brokers = await step("17 brokers", () => runBrokers(ctx));
      if (only.has(18)) r.egress = await step("18 egress", () => runEgress(ctx, run));
      if (steady) {
        const h = steady;
        r.steady = await step("19 steady", () => measureSteady(ctx, h));
      }
      if (only.has(20)) r.soak = await step("20 soak", () => runSoak(ctx));
      runs.push(r);
    }
  } finally {
    if (backlog) await dropBacklog(backlog).catch(() => undefined);
    await dashboard?.db.drop().catch(() => undefined);
    if (replay) await dropReplay(replay).catch(() => undefined);
    await history?.db.drop().catch(() => undefined);
    await steady?.db.drop().catch(() => undefined);
  }

  const figs = figures(runs);
  const loadAtEnd = os.loadavg();
  const notes = [
    `${opts.quick ? `QUICK MODE (smoke test; sizes too small to mean anything; PostgreSQL fsync ${cluster?.settings.fsync ?? "on"}). ` : ""}runs: ${opts.runs}; messages: ${opts.throughputMessages}; ` +
      `pg-boss: ${opts.pgboss.workers} work() x batchSize ${opts.pgboss.batchSize}, polling ${opts.pgboss.pollingIntervalSeconds} s, notifyWhenFull ${opts.pgboss.notifyWhenFull}`,
    checks(runs),
    `machine: ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "?"}), load average at start ${loadAtStart.map((l) => l.toFixed(2)).join(" ")}, at end ${loadAtEnd.map((l) => l.toFixed(2)).join(" ")}`,
  ];
  process.stdout.write(`\n${table(figs, notes.filter(Boolean))}\n`);

  if (opts.write) {
    const dir = path.join(REPO_ROOT, "bench/results");
    await mkdir(dir, { recursive: true });
    const file = path.join(dir, `${startedAt.toISOString().replace(/[:.]/g, "-")}.json`);
    const json = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      machine: {
        cpus: os.cpus().length,
        cpuModel: os.cpus()[0]?.model ?? null,
        totalMemMiB: Math.round(os.totalmem() / 2 ** 20),
        loadavgAtStart: loadAtStart,
        loadavgAtEnd: loadAtEnd,
        node: process.version,
        platform: `${os.platform()} ${os.release()}`,
      },
      options: { ...opts, only: [...opts.only] },
      postgres: cluster.settings,
      figures: figs,
      profile: {
        statements,
        claimPlanLargeBacklog: backlog?.largePlan ?? null,
        backlogSeedMs: backlog?.seedMs ?? null,
        dashboard: dashboard && {
          attempts: dashboard.attempts,
          endpoints: dashboard.endpoints,
          deliveries: dashboard.deliveries,
          seedMs: dashboard.seedMs,
          rollupMs: dashboard.rollupMs,
        },
      },
      runs,
    };
    await writeFile(file, `${JSON.stringify(json, null, 2)}\n`);
    process.stdout.write(`results: ${path.relative(process.cwd(), file)}\n`);
  }
}

/** Signature and durability checks over every hookrelay fast-receiver run. */
function checks(runs: RunResult[]): string {
  const all = runs
    .flatMap((r) => [
      r.hookrelay1,
      r.hookrelay2,
      r.source1,
      r.slowHookrelay,
      r.isolation,
      r.adaptive?.on,
      r.adaptive?.off,
    ])
    .filter((d) => d !== undefined);
  const sum = (f: (d: (typeof all)[number]) => number) => all.reduce((n, d) => n + f(d), 0);
  if (all.length === 0) return "";
  const durable = all.filter((d) => d.delivered !== null);
  const complete = durable.filter(
    (d) => d.delivered === d.expectedHealthy && d.attempts === d.expectedHealthy,
  ).length;
  return (
    `checks: ${sum((d) => d.verified)} sampled signatures verified, ${sum((d) => d.badSignature)} bad, ${sum((d) => d.unsigned)} unsigned; ` +
    `${complete}/${durable.length} throughput runs ended with one delivered row and one attempt row per message`
  );
}

main().then(
  async () => {
    await cleanup();
    process.exit(0);
  },
  async (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    await cleanup();
    process.exit(1);
  },
);
