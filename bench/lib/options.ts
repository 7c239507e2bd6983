/**
 * Command-line options of `npm run bench` and the sizes of every scenario. `--quick` shrinks
 * everything so the whole harness runs in seconds (a smoke test of every scenario, not a
 * figure: the sizes are the smallest at which each scenario still does its work).
 */
import { parseArgs } from "node:util";

export interface PgBossTuning {
  /** parallel `work()` loops in the one pg-boss process */
  workers: number;
  /** jobs fetched (and completed) per loop iteration */
  batchSize: number;
  /** pg-boss' minimum is 0.5 s */
  pollingIntervalSeconds: number;
  /** call `notifyWorker(id)` after a full batch so the loop fetches again at once */
  notifyWhenFull: boolean;
}

export interface BenchOptions {
  quick: boolean;
  runs: number;
  write: boolean;
  /** scenario numbers to run (1-20; 19 and 20 only when named); 9 needs 3, 7 compares with 3 */
  only: Set<number>;
  /** endpoints (and apps, one endpoint each); each has its own receiver port */
  endpoints: number;
  /** in-flight requests: hookrelay's HOOKRELAY_WORKER_CONCURRENCY and the ceiling's loops */
  concurrency: number;
  /** undici keep-alive sockets per origin, as hookrelay's sender uses */
  connectionsPerOrigin: number;
  throughputMessages: number;
  latencyRate: number;
  latencySeconds: number;
  /** scenario 4 warm-up before measuring */
  latencyWarmupSeconds: number;
  ingestSeconds: number;
  ingestClients: number;
  slowMessages: number;
  slowDelayMs: number;
  isolationMessages: number;
  isolationHanging: number;
  isolationTimeoutMs: number;
  backlogSmall: number;
  backlogLarge: number;
  backlogClaims: number;
  claimLimit: number;
  pgboss: PgBossTuning;
  /** run the pg-boss tuning sweep instead of the scenarios */
  tunePgBoss: boolean;
  /** extra `-c name=value` settings for PostgreSQL */
  pgSettings: string[];
  /** write V8 CPU profiles of hookrelay's processes to bench/results/profiles */
  cpuProf: boolean;
  /** scenario 12: delivered rows of the endpoint a bulk replay sends again */
  replayRows: number;
  /** scenario 12: the replay's pace, rows per second */
  replayRate: number;
  /** scenario 13: messages of its unordered and its 1,000-key run */
  orderedMessages: number;
  /** scenario 13: keys of the many-keys run (a multiple of endpoints: 10 per endpoint) */
  orderedManyKeys: number;
  /** scenario 13: keys of the few-keys run, one per endpoint */
  orderedFewKeys: number;
  /** scenario 13: messages of the few-keys run, and how long it may take at most */
  orderedFewMessages: number;
  orderedFewSeconds: number;
  /** scenario 16: attempts seeded in each layout, spread over historyDays days */
  historyAttempts: number;
  historyDays: number;
  /** scenario 19: the history seeded (attempts, messages with one delivery each, days) */
  steadyAttempts: number;
  steadyMessages: number;
  steadyDays: number;
  /** scenario 19: messages each delivery run delivers, on the empty and on the full database */
  steadyDeliveries: number;
  /** scenario 20: how long the soak delivers, at what rate, sampled how often */
  soakSeconds: number;
  soakRate: number;
  soakSampleSeconds: number;
  /** scenario 17: messages per broker, for the bare client and for hookrelay */
  brokerMessages: number;
  /** before each scenario, wait (at most settleMaxMs) until the 1-minute load average is at most this */
  settleLoad: number | null;
  settleMaxMs: number;
  /** give up on the whole bench after this long */
  watchdogMs: number;
}

/** PostgreSQL settings of `--quick` (its cluster is thrown away and its figures mean nothing). */
export const QUICK_PG_SETTINGS = ["fsync=off", "synchronous_commit=off", "full_page_writes=off"];

const HELP = `npm run bench -- [options]

  --quick              tiny sizes, 1 run, durability off: proves the harness works (no meaningful figures)
  --runs <n>           runs per figure; each figure is the median (default 3)
  --no-write           do not write bench/results/<timestamp>.json
  --only <list>        scenarios to run, e.g. 1,2,3,9 (default: 1-18, with --quick 1-20; 19 and 20 otherwise only when named)
  --messages <n>       scenario 3 messages (default 50000)
  --concurrency <n>    requests in flight per hookrelay worker and in the ceiling (default 1024)
  --clients <n>        scenario 5 concurrent clients (default 64)
  --rate <n>           scenario 4 messages/s (default 1000)
  --duration <s>       scenario 4 seconds (default 20)
  --backlog-large <n>  scenario 8 large backlog rows (default 1000000)
  --replay-rows <n>    scenario 12 rows of the bulk replay (default 1000000)
  --replay-rate <n>    scenario 12 replay pace, rows/s (default 500)
  --ordered-messages <n>  scenario 13 messages, unordered and under 1,000 keys (default 50000)
  --history-attempts <n>  scenario 16 attempts seeded in each layout (default 2000000)
  --history-days <n>   scenario 16 days they are spread over; one is purged per run (default 10)
  --broker-messages <n>  scenario 17 messages per broker (default 20000)
  --steady-attempts <n>  scenario 19 attempts of the seeded history (default 50000000)
  --steady-messages <n>  scenario 19 messages of the history, one delivery each (default 25000000)
  --steady-days <n>    scenario 19 days the history spans; two are purged per run (default 30)
  --steady-deliveries <n>  scenario 19 messages per delivery run, empty and full (default 150000)
  --soak-seconds <n>   scenario 20 soak length (default 1800)
  --soak-rate <n>      scenario 20 messages/s offered (default 200)
  --soak-sample <s>    scenario 20 seconds between samples (default 30)
  --pgboss <w,b,p,n>   pg-boss tuning: work() loops, batchSize, polling s, notify (1/0)
  --tune-pgboss        sweep pg-boss settings (scenario 2 sizes) and print the results
  --pg <name=value>    extra PostgreSQL setting (repeatable)
  --settle-load <x>    before each scenario, wait until the 1-minute load average is at most x
                       (at most --settle-minutes, default 30): a long seed's measurements wait
                       for a shared machine to calm down
  --settle-minutes <n> the longest such wait, per scenario
  --cpu-prof           V8 CPU profiles of hookrelay's processes in bench/results/profiles
`;

export function parseOptions(argv: string[]): BenchOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: "boolean", default: false },
      runs: { type: "string" },
      "no-write": { type: "boolean", default: false },
      only: { type: "string" },
      messages: { type: "string" },
      concurrency: { type: "string" },
      clients: { type: "string" },
      rate: { type: "string" },
      duration: { type: "string" },
      "backlog-large": { type: "string" },
      "replay-rows": { type: "string" },
      "replay-rate": { type: "string" },
      "ordered-messages": { type: "string" },
      "broker-messages": { type: "string" },
      "history-attempts": { type: "string" },
      "history-days": { type: "string" },
      "steady-attempts": { type: "string" },
      "steady-messages": { type: "string" },
      "steady-days": { type: "string" },
      "steady-deliveries": { type: "string" },
      "settle-load": { type: "string" },
      "settle-minutes": { type: "string" },
      "soak-seconds": { type: "string" },
      "soak-rate": { type: "string" },
      "soak-sample": { type: "string" },
      pgboss: { type: "string" },
      "tune-pgboss": { type: "boolean", default: false },
      pg: { type: "string", multiple: true },
      "cpu-prof": { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const num = (raw: string | undefined, fallback: number, name: string): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number`);
    return n;
  };
  const quick = values.quick;
  const only = new Set(
    // --quick smoke-tests 19 and 20 too (at tiny sizes); a full run names them
    (values.only ?? `1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18${quick ? ",19,20" : ""}`)
      .split(",")
      .map((s) => Number(s.trim()))
      .filter((n) => n >= 1 && n <= 20),
  );
  // 9 (memory) is sampled during 3; 7 and 10 are ratios of 3.
  if (only.has(9) || only.has(7) || only.has(10)) only.add(3);

  // Chosen by the sweep (`--tune-pgboss`, see docs/performance.md): the best pg-boss 10.4.2
  // setting found with at most the same requests in flight as hookrelay (2 x 256 = 512 <= 1024).
  let pgboss: PgBossTuning = {
    workers: 2,
    batchSize: 256,
    pollingIntervalSeconds: 0.5,
    notifyWhenFull: true,
  };
  if (values.pgboss) {
    const [w, b, p, n] = values.pgboss.split(",");
    pgboss = {
      workers: num(w, pgboss.workers, "pgboss workers"),
      batchSize: num(b, pgboss.batchSize, "pgboss batchSize"),
      pollingIntervalSeconds: num(p, pgboss.pollingIntervalSeconds, "pgboss polling"),
      notifyWhenFull: n === undefined ? pgboss.notifyWhenFull : n === "1" || n === "true",
    };
  }

  return {
    quick,
    runs: Math.round(num(values.runs, quick ? 1 : 3, "runs")),
    write: !values["no-write"],
    only,
    endpoints: 100,
    concurrency: Math.round(num(values.concurrency, 1024, "concurrency")),
    connectionsPerOrigin: 32,
    throughputMessages: Math.round(num(values.messages, quick ? 200 : 50_000, "messages")),
    latencyRate: num(values.rate, quick ? 100 : 1_000, "rate"),
    latencySeconds: num(values.duration, quick ? 0.5 : 20, "duration"),
    latencyWarmupSeconds: quick ? 0.1 : 2,
    ingestSeconds: quick ? 0.3 : 10,
    ingestClients: Math.round(num(values.clients, 64, "clients")),
    slowMessages: quick ? 50 : 20_000,
    slowDelayMs: 50,
    isolationMessages: quick ? 100 : 50_000,
    isolationHanging: 10,
    isolationTimeoutMs: quick ? 500 : 2_000,
    replayRows: Math.round(num(values["replay-rows"], quick ? 5_000 : 1_000_000, "replay-rows")),
    replayRate: Math.round(num(values["replay-rate"], quick ? 200 : 500, "replay-rate")),
    backlogSmall: quick ? 200 : 10_000,
    backlogLarge: Math.round(
      num(values["backlog-large"], quick ? 1_000 : 1_000_000, "backlog-large"),
    ),
    backlogClaims: quick ? 2 : 30,
    claimLimit: 500,
    pgboss,
    tunePgBoss: values["tune-pgboss"],
    // --quick proves the harness runs, its figures mean nothing: durability off saves the
    // flushes of every CREATE DATABASE and commit (a --pg given still wins)
    pgSettings: [...(quick ? QUICK_PG_SETTINGS : []), ...(values.pg ?? [])],
    cpuProf: values["cpu-prof"],
    historyAttempts: Math.round(
      num(values["history-attempts"], quick ? 20_000 : 2_000_000, "history-attempts"),
    ),
    historyDays: Math.round(num(values["history-days"], quick ? 4 : 10, "history-days")),
    orderedMessages: Math.round(
      num(values["ordered-messages"], quick ? 400 : 50_000, "ordered-messages"),
    ),
    orderedManyKeys: 1_000,
    orderedFewKeys: 10,
    orderedFewMessages: quick ? 40 : 5_000,
    orderedFewSeconds: quick ? 3 : 15,
    brokerMessages: Math.round(num(values["broker-messages"], 20_000, "broker-messages")),
    steadyAttempts: Math.round(
      num(values["steady-attempts"], quick ? 4_000 : 50_000_000, "steady-attempts"),
    ),
    steadyMessages: Math.round(
      num(values["steady-messages"], quick ? 2_000 : 25_000_000, "steady-messages"),
    ),
    steadyDays: Math.round(num(values["steady-days"], quick ? 4 : 30, "steady-days")),
    steadyDeliveries: Math.round(
      num(values["steady-deliveries"], quick ? 300 : 150_000, "steady-deliveries"),
    ),
    soakSeconds: num(values["soak-seconds"], quick ? 4 : 1_800, "soak-seconds"),
    soakRate: num(values["soak-rate"], quick ? 50 : 200, "soak-rate"),
    soakSampleSeconds: num(values["soak-sample"], quick ? 1 : 30, "soak-sample"),
    settleLoad:
      values["settle-load"] === undefined ? null : num(values["settle-load"], 0, "settle-load"),
    settleMaxMs: num(values["settle-minutes"], 30, "settle-minutes") * 60_000,
    // the full-size history (19) and the soak (20) take hours, not minutes
    // (--quick: under the smoke test's 10 minutes, on a loaded machine too)
    watchdogMs: quick ? 540_000 : (only.has(19) || only.has(20) ? 8 * 60 : 90) * 60_000,
  };
}
