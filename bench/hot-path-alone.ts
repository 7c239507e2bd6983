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
 * write (its src/queue/claim-deliveries.ts, record-results.ts), in turn with this checkout's
 * (`this`), each round on a fresh database seeded alike, the order reversed every other
 * round: the machine's drift falls on both alike. Printed per round and as medians: CPU ms
 * per 1,000 deliveries of PostgreSQL and of the client, and the wall time.
 *
 *   node --import tsx bench/hot-path-alone.ts [--messages 20000] [--endpoints 10]
 *     [--limit 256] [--rounds 3] [--tree old=/work/wt-head] [--statements]
 *
 * `--statements`: each run's top statements from pg_stat_statements too (their execution
 * time per 1,000 deliveries).
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { loadConfig } from "../src/config.ts";
import { makePool } from "../src/db/pool.ts";
import { raiseDeliveryFloor } from "../src/ops/delivery-floor.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import type { ClaimedDelivery, ClaimOptions } from "../src/queue/claim-deliveries.ts";
import type { DeliveryResult } from "../src/queue/record-results.ts";
import { successResult } from "../test/helpers/delivery-result.ts";
import { resetStatements, startCluster, topStatements } from "./lib/cluster.ts";
import { processStat } from "./lib/cpu.ts";
import { createTenants, makeMessages, seedMessages } from "./lib/seed.ts";
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
const DAY = 86_400_000;

interface Tree {
  name: string;
  claimDeliveries: (db: unknown, o: ClaimOptions) => Promise<ClaimedDelivery[]>;
  recordResults: (db: unknown, results: DeliveryResult[], health: unknown) => Promise<number>;
  ClaimWindow: new () => unknown;
}

async function loadTree(name: string, dir: string): Promise<Tree> {
  const claim = await import(`${dir}/src/queue/claim-deliveries.ts`);
  const record = await import(`${dir}/src/queue/record-results.ts`);
  const window = await import(`${dir}/src/queue/claim-window.ts`);
  return {
    name,
    claimDeliveries: claim.claimDeliveries,
    recordResults: record.recordResults,
    ClaimWindow: window.ClaimWindow,
  };
}

const trees: Tree[] = [await loadTree("this", new URL("..", import.meta.url).pathname)];
for (const t of args.tree) {
  const [name, dir] = t.split("=");
  if (!name || !dir) throw new Error(`--tree ${t}: expected name=/path`);
  trees.push(await loadTree(name, dir));
}

const health = loadConfig({}).health;

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
      const url = await cluster.createDb(dbName);
      const pool = makePool({ connectionString: url, max: 2 });
      try {
        const tenants = await createTenants(pool, urls, "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3");
        await ensureMessagePartitions(pool, { interval: "day", aheadMs: 2 * DAY }, 2 * DAY);
        await seedMessages(pool, tenants, makeMessages(MESSAGES, ENDPOINTS));
        await raiseDeliveryFloor(pool);
        await pool.query("vacuum analyze");
        const window = new tree.ClaimWindow();
        // (the connections open and each statement planned before the stretch measured)
        await pool.query("select 1");
        await resetStatements(cluster);
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
            health,
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
