/**
 * The worker's two statements alone, in a closed loop (issues 29, 30; docs/performance.md,
 * "The hot path alone"): claim up to `--limit` rows, make every one a success, write the
 * results back, until every delivery of a seeded backlog is delivered, one client, nothing
 * else running. No receiver, no broker, no event loop of a worker: what is left is what
 * hookrelay itself spends per delivery in PostgreSQL (the cluster's processes, from /proc)
 * and in the client (this process: the statements' building and parsing, and this loop's own
 * small part, alike for every tree).
 *
 * Each `--tree name=/path` (a checkout with its node_modules) runs its own claim and result
 * write (its src/queue/claim-deliveries.ts, record-results.ts) on its own layout (a fresh
 * database made by its own migrations, its periods if it has them, its bench's own seed of
 * the same messages), in turn with this checkout's (`this`), the order reversed every other
 * round: the machine's drift falls on both alike. A checkout from before the claim's window
 * or the periods runs without them. Printed per round and as medians: CPU ms
 * per 1,000 deliveries of PostgreSQL and of the client, and the wall time.
 *
 *   node --import tsx bench/hot-path-alone.ts [--messages 20000] [--endpoints 10]
 *     [--limit 256] [--rounds 3] [--tree old=/work/wt-head] [--statements]
 *
 * `--statements`: each run's PostgreSQL CPU by process (bench/lib/pg-cpu-kinds.ts) and its
 * top statements from pg_stat_statements (their execution time per 1,000 deliveries) too.
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { makePool, type Pool } from "../src/db/pool.ts";
import type { ClaimedDelivery, ClaimOptions } from "../src/queue/claim-deliveries.ts";
import type { DeliveryResult } from "../src/queue/record-results.ts";
import { successResult } from "../test/helpers/delivery-result.ts";
import { resetStatements, startCluster, topStatements } from "./lib/cluster.ts";
import { processStat } from "./lib/cpu.ts";
import { formatPgCpuByKind, startPgCpuByKind } from "./lib/pg-cpu-kinds.ts";
import type { createTenants, makeMessages, seedMessages } from "./lib/seed.ts";
import { median } from "./lib/stats.ts";

const { values: args } = parseArgs({
  options: {
    messages: { type: "string", default: "20000" },
    endpoints: { type: "string", default: "10" },
    limit: { type: "string", default: "256" },
    rounds: { type: "string", default: "3" },
    tree: { type: "string", multiple: true, default: [] },
    pg: { type: "string", multiple: true, default: [] },
    statements: { type: "boolean", default: false },
  },
});
const MESSAGES = Number(args.messages);
const ENDPOINTS = Number(args.endpoints);
const LIMIT = Number(args.limit);
const ROUNDS = Number(args.rounds);

interface Tree {
  name: string;
  claimDeliveries: (db: unknown, o: ClaimOptions) => Promise<ClaimedDelivery[]>;
  recordResults: (db: unknown, results: DeliveryResult[], health: unknown) => Promise<number>;
  /** absent in a checkout from before the claim's window */
  ClaimWindow?: new () => unknown;
  /** the checkout's own schema, periods and seeding: it runs on its own layout */
  migrate: (pool: Pool) => Promise<unknown>;
  ensureHistoryPartitions?: (pool: Pool, config: unknown) => Promise<unknown>;
  raiseDeliveryFloor?: (pool: Pool) => Promise<unknown>;
  loadConfig: (env: Record<string, string>) => { health: unknown };
  createTenants: typeof createTenants;
  makeMessages: typeof makeMessages;
  seedMessages: typeof seedMessages;
}

/** A module of the checkout, or undefined where it has none. */
async function optional<T>(path: string): Promise<T | undefined> {
  try {
    return (await import(path)) as T;
  } catch {
    return undefined;
  }
}

async function loadTree(name: string, dir: string): Promise<Tree> {
  const claim = await import(`${dir}/src/queue/claim-deliveries.ts`);
  const record = await import(`${dir}/src/queue/record-results.ts`);
  const window = await optional<{ ClaimWindow: Tree["ClaimWindow"] }>(
    `${dir}/src/queue/claim-window.ts`,
  );
  const periods = await optional<{ ensureHistoryPartitions: Tree["ensureHistoryPartitions"] }>(
    `${dir}/src/ops/message-partitions.ts`,
  );
  const floor = await optional<{ raiseDeliveryFloor: Tree["raiseDeliveryFloor"] }>(
    `${dir}/src/ops/delivery-floor.ts`,
  );
  const seed = await import(`${dir}/bench/lib/seed.ts`);
  return {
    name,
    claimDeliveries: claim.claimDeliveries,
    recordResults: record.recordResults,
    ClaimWindow: window?.ClaimWindow,
    migrate: (await import(`${dir}/src/db/migrate.ts`)).migrate,
    ensureHistoryPartitions: periods?.ensureHistoryPartitions,
    raiseDeliveryFloor: floor?.raiseDeliveryFloor,
    loadConfig: (await import(`${dir}/src/config.ts`)).loadConfig,
    createTenants: seed.createTenants,
    makeMessages: seed.makeMessages,
    seedMessages: seed.seedMessages,
  };
}

const trees: Tree[] = [await loadTree("this", new URL("..", import.meta.url).pathname)];
for (const t of args.tree) {
  const [name, dir] = t.split("=");
  if (!name || !dir) throw new Error(`--tree ${t}: expected name=/path`);
  trees.push(await loadTree(name, dir));
}

/** A claimed row's success, as the worker's result writer gets it. */
function success(d: ClaimedDelivery, token: string, last: boolean): DeliveryResult {
  return successResult({
    deliveryId: d.id,
    messageMs: d.messageMs,
    claimToken: token,
    messageId: d.messageId,
    endpointId: d.endpointId,
    appId: d.appId,
    trigger: d.trigger,
    url: d.url,
    attemptNumber: d.attemptCount + 1,
    responseBody: "ok",
    isProbe: d.isProbe,
    finishesClaim: last,
  });
}

/** CPU ms of the cluster's processes (user + system, from /proc). */
function clusterCpuMs(pids: number[]): number {
  let ms = 0;
  for (const pid of pids) ms += processStat(pid)?.cpuMs ?? 0;
  return ms;
}

interface Figures {
  pgMs: number;
  clientMs: number;
  wallMs: number;
  claims: number;
  writes: number;
}

const cluster = await startCluster(args.pg);
const results = new Map<string, Figures[]>(trees.map((t) => [t.name, []]));
try {
  const urls = Array.from({ length: ENDPOINTS }, (_, i) => `http://127.0.0.1:9/e/${i}`);
  console.log(
    `hot path alone: ${MESSAGES} deliveries over ${ENDPOINTS} endpoints, claims of up to ${LIMIT}, ${ROUNDS} rounds; trees ${trees.map((t) => t.name).join(", ")}`,
  );
  console.log(
    "| round | tree | PostgreSQL CPU ms / 1k | client CPU ms / 1k | wall ms / 1k | claims | writes |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? trees : [...trees].reverse();
    for (const tree of order) {
      const dbName = `hot_alone_${round}_${tree.name}`;
      // an empty database with the checkout's own migrations (not the cluster's template)
      await cluster.admin((c) =>
        c.query(`create database ${c.escapeIdentifier(dbName)} template template0`),
      );
      const url = cluster.urlFor(dbName);
      const pool = makePool({ connectionString: url, max: 2 });
      try {
        await tree.migrate(pool);
        const config = tree.loadConfig({});
        await tree.ensureHistoryPartitions?.(pool, config);
        const tenants = await tree.createTenants(
          pool,
          urls,
          "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3",
        );
        await tree.seedMessages(pool, tenants, tree.makeMessages(MESSAGES, ENDPOINTS));
        await tree.raiseDeliveryFloor?.(pool);
        await pool.query("vacuum analyze");
        const window = tree.ClaimWindow ? new tree.ClaimWindow() : undefined;
        // (the connections open and each statement planned before the stretch measured)
        await pool.query("select 1");
        await resetStatements(cluster);
        // (--statements: PostgreSQL's CPU by process too, sampled every 200 ms)
        const kinds = args.statements ? startPgCpuByKind(() => cluster.pids(), pool) : null;
        const cpu0 = process.cpuUsage();
        const pg0 = clusterCpuMs(cluster.pids());
        const t0 = performance.now();
        let done = 0;
        let claims = 0;
        let writes = 0;
        while (done < MESSAGES) {
          const token = randomUUID();
          const claimed = await tree.claimDeliveries(pool, {
            window: window as ClaimOptions["window"],
            workerId: "hot-path-alone",
            workerLock: null,
            claimToken: token,
            limit: LIMIT,
            defaultMaxInFlight: 10_000,
            defaultAdaptiveConcurrency: "off",
            defaultTimeoutMs: 15_000,
            leaseMarginMs: 30_000,
          });
          claims++;
          if (claimed.length === 0) throw new Error(`nothing claimed with ${MESSAGES - done} left`);
          await tree.recordResults(
            pool,
            claimed.map((d, i) => success(d, token, i === claimed.length - 1)),
            config.health,
          );
          writes++;
          done += claimed.length;
        }
        const wallMs = performance.now() - t0;
        const pgMs = clusterCpuMs(cluster.pids()) - pg0;
        const used = process.cpuUsage(cpu0);
        const clientMs = (used.user + used.system) / 1000;
        const per = (ms: number) => (ms * 1000) / MESSAGES;
        const f = { pgMs: per(pgMs), clientMs: per(clientMs), wallMs: per(wallMs), claims, writes };
        results.get(tree.name)?.push(f);
        console.log(
          `| ${round + 1} | ${tree.name} | ${f.pgMs.toFixed(1)} | ${f.clientMs.toFixed(1)} | ${f.wallMs.toFixed(1)} | ${claims} | ${writes} |`,
        );
        if (kinds) console.log(`|   | by process: ${formatPgCpuByKind(await kinds(), MESSAGES)} |`);
        // the two statements' own execution time, per 1,000 deliveries
        if (args.statements)
          for (const t of await topStatements(cluster, 3))
            console.log(
              `|   | ${t.calls} x ${t.meanMs} ms | ${per(t.totalMs).toFixed(1)} ms / 1k | ${t.query.slice(0, 60)} |`,
            );
      } finally {
        await pool.end();
        await cluster.dropDb(dbName);
      }
    }
  }
  console.log("\nmedians per 1,000 deliveries:");
  for (const [name, fs] of results)
    console.log(
      `  ${name}: PostgreSQL ${median(fs.map((f) => f.pgMs)).toFixed(1)} ms, client ${median(fs.map((f) => f.clientMs)).toFixed(1)} ms, wall ${median(fs.map((f) => f.wallMs)).toFixed(1)} ms`,
    );
} finally {
  await cluster.stop();
}
