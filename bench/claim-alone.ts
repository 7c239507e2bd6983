/**
 * The claim statement alone (issue 29; docs/performance.md, "The ordered claim alone"):
 * scenario 13's two backlogs, unordered and 1,000 keys over 100 endpoints, each in a fresh
 * database on the bench's own cluster (bench/lib/cluster.ts, its settings), and the claim as
 * the worker sends it prepared on connections of their own, one per variant of settings and
 * moment of planning, side by side. Each connection's generic plan is built once, at the
 * chosen moment, and kept, as a worker connection keeps it:
 *
 * - `empty`: before any row, on the never-analyzed database (the bench's worker plans its
 *   first claim before the backlog is seeded);
 * - `seeded`: after the backlog was written, no ANALYZE;
 * - `analyzed`: after `VACUUM ANALYZE` of the backlog (what autovacuum leaves).
 *
 * Per state of the backlog (`initial`: nothing in flight; `steady`: as the worker keeps it,
 * about 1,000 rows in flight, then one row per endpoint delivered, so each endpoint has a
 * little room and, ordered, one free head), `--pairs` rounds in which every connection runs
 * `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF)` of its plan in a transaction rolled back, in
 * turn, the order reversed every other round. Printed: each variant's median execution time
 * (PostgreSQL's own figure), median shared buffer hits and the rows claimed.
 *
 *   node --import tsx bench/claim-alone.ts [--messages 50000] [--pairs 15]
 *     [--plan-at empty,analyzed] [--states initial,steady] [--backlogs unordered,ordered]
 *     [--variant name=setting:value+setting:value ...] [--no-default-variants] [--plans]
 *     [--past-days 30]
 *
 * Default variants: `probes` (the worker's CLAIM_SETTINGS) and `plain` (JIT off and the
 * generic plan alone, without INDEX_PROBES). `--variant` adds one: the generic plan and JIT
 * off plus the settings named (e.g. `--variant hash=enable_hashjoin:off`). `--tree
 * name=/path/to/checkout` adds the claim of another checkout of hookrelay (its statement
 * and its CLAIM_SETTINGS), to compare two versions of the statement on one connection each,
 * side by side (the checkout needs its node_modules). `--past-days N` makes N days of
 * empty periods before today's (messages, deliveries, attempts), as a month of history has.
 */
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import pg from "pg";
import { GENERIC_PLAN, type LocalSettings, WITHOUT_JIT } from "../src/db/local-settings.ts";
import { makePool, type Queryable } from "../src/db/pool.ts";
import { ensureAttemptPartitions } from "../src/ops/attempt-partitions.ts";
import { raiseDeliveryFloor } from "../src/ops/delivery-floor.ts";
import { ensureMessagePartitions } from "../src/ops/message-partitions.ts";
import {
  CLAIM_SETTINGS,
  type ClaimOptions,
  claimDeliveries,
} from "../src/queue/claim-deliveries.ts";
import { ClaimWindow } from "../src/queue/claim-window.ts";
import { startCluster } from "./lib/cluster.ts";
import { createTenants, makeMessages, seedMessages } from "./lib/seed.ts";
import { median } from "./lib/stats.ts";

const { values: args } = parseArgs({
  options: {
    messages: { type: "string", default: "50000" },
    keys: { type: "string", default: "1000" },
    endpoints: { type: "string", default: "100" },
    pairs: { type: "string", default: "15" },
    limit: { type: "string", default: "256" },
    "plan-at": { type: "string", default: "empty,analyzed" },
    states: { type: "string", default: "initial,steady" },
    backlogs: { type: "string", default: "unordered,ordered" },
    variant: { type: "string", multiple: true, default: [] },
    "no-default-variants": { type: "boolean", default: false },
    plans: { type: "boolean", default: false },
    pg: { type: "string", multiple: true, default: [] },
    tree: { type: "string", multiple: true, default: [] },
    "past-days": { type: "string", default: "0" },
  },
});

const MESSAGES = Number(args.messages);
const KEYS = Number(args.keys);
const ENDPOINTS = Number(args.endpoints);
const PAIRS = Number(args.pairs);
const LIMIT = Number(args.limit);
const PAST_DAYS = Number(args["past-days"]);
const DAY = 86_400_000;
const list = (s: string) => s.split(",").filter(Boolean);
const PLAN_AT = list(args["plan-at"]) as ("empty" | "seeded" | "analyzed")[];
const STATES = list(args.states) as ("initial" | "steady")[];
const BACKLOGS = list(args.backlogs) as ("unordered" | "ordered")[];

type Claim = typeof claimDeliveries;
interface Variant {
  settings: LocalSettings;
  claim: Claim;
}
const variants: Record<string, Variant> = args["no-default-variants"]
  ? {}
  : {
      probes: { settings: CLAIM_SETTINGS, claim: claimDeliveries },
      plain: { settings: { ...WITHOUT_JIT, ...GENERIC_PLAN }, claim: claimDeliveries },
    };
for (const t of args.tree) {
  const [name, dir] = t.split("=");
  if (!name || !dir) throw new Error(`--tree ${t}: expected name=/path`);
  const other = (await import(`${dir}/src/queue/claim-deliveries.ts`)) as {
    claimDeliveries: Claim;
    CLAIM_SETTINGS: LocalSettings;
  };
  variants[name] = { settings: other.CLAIM_SETTINGS, claim: other.claimDeliveries };
}
for (const v of args.variant) {
  const [name, spec = ""] = v.split("=");
  const settings: Record<string, string> = { ...WITHOUT_JIT, ...GENERIC_PLAN };
  for (const kv of spec.split("+").filter(Boolean)) {
    const [k, val] = kv.split(":");
    if (!k || !val) throw new Error(`--variant ${v}: expected name=setting:value+...`);
    settings[k] = val;
  }
  if (!name) throw new Error(`--variant ${v}: no name`);
  variants[name] = { settings: settings as LocalSettings, claim: claimDeliveries };
}

/**
 * The claim's window of periods (src/queue/claim-window.ts), read from the database being
 * measured, as the worker's is: captured statements carry its bounds. (A checkout from before
 * the window ignores it and computes its bounds in the statement.)
 */
let window = new ClaimWindow();

const claimOptions = (): ClaimOptions => ({
  window,
  workerId: "claim-alone",
  workerLock: null,
  claimToken: randomUUID(),
  limit: LIMIT,
  defaultMaxInFlight: 20,
  defaultAdaptiveConcurrency: "off",
  defaultTimeoutMs: 15_000,
  leaseMarginMs: 30_000,
});

/** The claim statement as the worker sends it, captured without running it. */
async function claimStatement(claim: Claim): Promise<{ text: string; values: unknown[] }> {
  let sent: { text: string; values: unknown[] } | null = null;
  const recorder = {
    query: async (q: { text: string; values: unknown[] }) => {
      sent = q;
      return { rows: [] };
    },
  } as unknown as Queryable;
  await claim(recorder, claimOptions());
  if (!sent) throw new Error("claimDeliveries sent no statement");
  return sent;
}

interface Prepared {
  name: string;
  client: pg.Client;
  claim: Claim;
}

/** A connection with `settings` for its session and the claim prepared and planned now. */
async function prepare(url: string, name: string, variant: Variant): Promise<Prepared> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  await client.connect();
  for (const [k, v] of Object.entries(variant.settings))
    await client.query("select set_config($1, $2, false)", [k, v]);
  const st = await claimStatement(variant.claim);
  await client.query(`prepare claim as ${st.text}`);
  // the generic plan is built at the first execution and kept: build it now, without running it
  await client.query(`explain (costs off) execute claim(${literals(client, st.values)})`);
  return { name, client, claim: variant.claim };
}

function literals(client: pg.Client, values: unknown[]): string {
  return values.map((v) => (v === null ? "null" : client.escapeLiteral(String(v)))).join(", ");
}

interface Sample {
  ms: number;
  hits: number;
  rows: number;
  plan: string;
}

async function runOnce(p: Prepared): Promise<Sample> {
  const st = await claimStatement(p.claim);
  await p.client.query("begin");
  try {
    const { rows } = await p.client.query(
      `explain (analyze, buffers, timing off, costs off) execute claim(${literals(p.client, st.values)})`,
    );
    const plan = rows.map((r) => r["QUERY PLAN"] as string).join("\n");
    const hits = Number(/Buffers: shared hit=(\d+)/.exec(plan)?.[1] ?? 0);
    const ms = Number(/Execution Time: ([\d.]+) ms/.exec(plan)?.[1] ?? Number.NaN);
    // the top node's row count: the rows the claim returned
    const top = Number(/\(actual rows=(\d+) loops=1\)/.exec(plan)?.[1] ?? 0);
    return { ms, hits, rows: top, plan };
  } finally {
    await p.client.query("rollback");
  }
}

/** Claims until every claimable row is in flight (at most 1,000 rows: the worker's), as a worker would. */
async function fillInFlight(pool: pg.Pool): Promise<number> {
  let total = 0;
  for (let i = 0; i < 40 && total < 1_000; i++) {
    const got = await claimDeliveries(pool, {
      ...claimOptions(),
      limit: Math.min(LIMIT, 1_000 - total),
    });
    if (got.length === 0) break;
    total += got.length;
  }
  return total;
}

/** One in-flight row per endpoint delivered (its oldest), its room given back. */
async function deliverOnePerEndpoint(pool: pg.Pool): Promise<void> {
  await pool.query(`
    with d as (
      update deliveries set status = 'delivered', claim_token = null, claimed_by = null,
             lease_expires_at = null, updated_at = now()
      where id in (select distinct on (endpoint_id) id from deliveries
                   where status = 'in_flight' order by endpoint_id, id)
      returning endpoint_id)
    update endpoint_health h set released = h.released + n.n
    from (select endpoint_id, count(*)::int as n from d group by endpoint_id) n
    where n.endpoint_id = h.endpoint_id`);
}

const cluster = await startCluster(args.pg);
try {
  const urls = Array.from({ length: ENDPOINTS }, (_, i) => `http://127.0.0.1:9/e/${i}`);
  console.log(
    `claim alone: ${MESSAGES} messages, ${ENDPOINTS} endpoints, limit ${LIMIT}, ${PAIRS} rounds; variants ${Object.keys(variants).join(", ")}; planned at ${PLAN_AT.join(", ")}`,
  );
  console.log(
    "| backlog | state | variant | planned | median ms | median hits | rows | runs (ms) |",
  );
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const backlog of BACKLOGS) {
    const dbName = `claim_alone_${backlog}`;
    const url = await cluster.createDb(dbName);
    const pool = makePool({ connectionString: url, max: 2 });
    const prepared: Prepared[] = [];
    try {
      const tenants = await createTenants(pool, urls, "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3");
      // a month of history's periods (empty): what the claim's plan spans on a real install
      if (PAST_DAYS > 0) {
        const from = Date.now() - PAST_DAYS * DAY;
        const periods = { interval: "day", aheadMs: (PAST_DAYS + 2) * DAY } as const;
        await ensureMessagePartitions(pool, periods, PAST_DAYS * DAY, from);
        await ensureAttemptPartitions(pool, periods, PAST_DAYS * DAY, from);
      }
      const prepAll = async (at: string) => {
        if (!PLAN_AT.includes(at as never)) return;
        for (const [name, variant] of Object.entries(variants))
          prepared.push(await prepare(url, `${name}@${at}`, variant));
      };
      await prepAll("empty");
      const messages = makeMessages(MESSAGES, ENDPOINTS, 0, backlog === "ordered" ? KEYS : null);
      await seedMessages(pool, tenants, messages);
      // the floor where the worker's maintenance keeps it (the oldest queued row's period)
      await raiseDeliveryFloor(pool);
      window = new ClaimWindow();
      await window.bounds(pool);
      await prepAll("seeded");
      await pool.query("vacuum analyze");
      await prepAll("analyzed");
      for (const state of STATES) {
        if (state === "steady") {
          await fillInFlight(pool);
          await deliverOnePerEndpoint(pool);
        }
        const samples = new Map<string, Sample[]>(prepared.map((p) => [p.name, []]));
        for (let round = 0; round < PAIRS + 1; round++) {
          const order = round % 2 === 0 ? prepared : [...prepared].reverse();
          for (const p of order) {
            const s = await runOnce(p);
            // the first round warms the caches: not counted
            if (round > 0) samples.get(p.name)?.push(s);
          }
        }
        for (const p of prepared) {
          const ss = samples.get(p.name) ?? [];
          const [variant, at] = p.name.split("@");
          console.log(
            `| ${backlog} | ${state} | ${variant} | ${at} | ${median(ss.map((s) => s.ms)).toFixed(1)} | ${median(ss.map((s) => s.hits))} | ${ss[0]?.rows ?? 0} | ${ss.map((s) => s.ms.toFixed(0)).join(" ")} |`,
          );
          if (args.plans && ss[0]) console.log(ss[0].plan);
        }
      }
    } finally {
      for (const p of prepared) await p.client.end().catch(() => undefined);
      await pool.end();
      await cluster.dropDb(dbName);
    }
  }
} finally {
  await cluster.stop();
}
