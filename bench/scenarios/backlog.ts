/**
 * Scenario 8: backlog growth. Two databases, one with 10k and one with 1M pending
 * deliveries (100 endpoints, rows spread evenly, oldest first), seeded once with
 * generate_series in the shape enqueueMessage writes, then VACUUM ANALYZE (what autovacuum
 * would have done by then). Each run times `claimDeliveries` (src/queue/claim-deliveries.ts)
 * taking 500 rows, inside a transaction that is rolled back, so every claim sees the same
 * backlog; the figure is the median per run and the ratio large / small.
 */
import { randomUUID } from "node:crypto";
import { type Queryable, withTransaction } from "../../src/db/pool.ts";
import {
  CLAIM_SETTINGS,
  type ClaimOptions,
  claimDeliveries,
} from "../../src/queue/claim-deliveries.ts";
import type { BenchContext, FreshDb } from "../lib/context.ts";
import { createTenants, EVENT_TYPE } from "../lib/seed.ts";
import { median, nowMs } from "../lib/stats.ts";

export interface Backlog {
  small: FreshDb;
  large: FreshDb;
  smallRows: number;
  largeRows: number;
  seedMs: { small: number; large: number };
  /** EXPLAIN (ANALYZE, BUFFERS) of one claim on the large backlog */
  largePlan: string[];
}

export interface BacklogRun {
  smallMs: number;
  largeMs: number;
  ratio: number;
  /** rows a claim returned (should equal the limit) */
  claimedRows: number;
}

async function seed(ctx: BenchContext, db: FreshDb, rows: number): Promise<number> {
  const t0 = nowMs();
  // Endpoints point at a closed port: nothing is ever sent in this scenario.
  const urls = Array.from({ length: ctx.opts.endpoints }, (_, i) => `http://127.0.0.1:9/e/${i}`);
  await createTenants(db.pool, urls, ctx.secret);
  await withTransaction(db.pool, async (client) => {
    await client.query(
      `create temp table bench_targets on commit drop as
       select (row_number() over (order by id))::int - 1 as k, id as ep, app_id as app from endpoints`,
    );
    // Ids sort like real ones (msg_ + 22 chars); row g is g ms younger than row g - 1.
    await client.query(
      `insert into messages (id, app_id, event_type, payload, created_at)
       select 'msg_' || lpad(g::text, 22, '0'), t.app, $2::text,
              '{"type":"order.paid","seq":' || g || ',"order":{"id":"ord_' || g || '","total":"149.90","currency":"EUR"}}',
              now() - ($1::int - g) * interval '1 millisecond'
       from generate_series(1, $1::int) g join bench_targets t on t.k = g % $3::int`,
      [rows, EVENT_TYPE, ctx.opts.endpoints],
    );
    await client.query(
      `insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at, created_at)
       select 'msg_' || lpad(g::text, 22, '0'), t.ep, t.app, 5,
              now() - ($1::int - g) * interval '1 millisecond', now() - ($1::int - g) * interval '1 millisecond'
       from generate_series(1, $1::int) g join bench_targets t on t.k = g % $2::int`,
      [rows, ctx.opts.endpoints],
    );
  });
  await db.pool.query("vacuum (analyze) messages, deliveries");
  return nowMs() - t0;
}

const claimOptions = (limit: number): ClaimOptions => ({
  workerId: "bench",
  workerLock: null,
  claimToken: randomUUID(),
  limit,
  defaultMaxInFlight: 20,
  defaultTimeoutMs: 15_000,
  leaseMarginMs: 30_000,
});

/** The claim statement as hookrelay sends it, captured without running it. */
async function claimStatement(limit: number): Promise<{ text: string; values: unknown[] }> {
  let captured: { text: string; values: unknown[] } | null = null;
  const recorder = {
    query: async (config: { text: string; values: unknown[] }) => {
      captured = config;
      return { rows: [] };
    },
  } as unknown as Queryable;
  await claimDeliveries(recorder, claimOptions(limit));
  if (!captured) throw new Error("claimDeliveries sent no statement");
  return captured;
}

export async function prepareBacklog(ctx: BenchContext): Promise<Backlog> {
  const { opts } = ctx;
  const small = await ctx.freshDb("backlog_small");
  const large = await ctx.freshDb("backlog_large");
  const smallMs = await seed(ctx, small, opts.backlogSmall);
  ctx.log(`  backlog: ${opts.backlogSmall} rows seeded in ${Math.round(smallMs)} ms`);
  const largeMs = await seed(ctx, large, opts.backlogLarge);
  ctx.log(`  backlog: ${opts.backlogLarge} rows seeded in ${Math.round(largeMs)} ms`);

  const stmt = await claimStatement(opts.claimLimit);
  const client = await large.pool.connect();
  let largePlan: string[] = [];
  try {
    await client.query("begin");
    const { rows } = await client.query(`explain (analyze, buffers) ${stmt.text}`, stmt.values);
    largePlan = rows.map((r) => r["QUERY PLAN"] as string);
  } finally {
    await client.query("rollback");
    client.release();
  }
  return {
    small,
    large,
    smallRows: opts.backlogSmall,
    largeRows: opts.backlogLarge,
    seedMs: { small: smallMs, large: largeMs },
    largePlan,
  };
}

/**
 * Median ms of `claims` claims of `limit` rows, each rolled back, after 3 warm-up claims,
 * with the worker's settings for its claim (CLAIM_SETTINGS: the generic plan it keeps per
 * connection, so planning is in the warm-up), as the worker runs it (scenario 19 times its
 * claims with it too).
 */
export async function timeClaims(
  db: FreshDb,
  claims: number,
  limit: number,
): Promise<{ ms: number; rows: number }> {
  const [only] = await timeClaimsAlternating([db], claims, limit);
  return only!;
}

/**
 * timeClaims on several databases at once, one claim on each in turn, so that every
 * database's claims meet the same moments of a shared machine (scenario 19 compares its
 * full database with an empty one this way).
 */
export async function timeClaimsAlternating(
  dbs: FreshDb[],
  claims: number,
  limit: number,
): Promise<{ ms: number; rows: number }[]> {
  const clients = await Promise.all(dbs.map((db) => db.pool.connect()));
  const samples: number[][] = dbs.map(() => []);
  const rows: number[] = dbs.map(() => 0);
  try {
    for (let k = 0; k < claims + 3; k++) {
      for (const [i, client] of clients.entries()) {
        await client.query("begin");
        // the worker's settings for its claim (its generic plan, index probes, no JIT),
        // which it sends on the pool; claimDeliveries on a client runs the statement alone
        for (const [name, value] of Object.entries(CLAIM_SETTINGS))
          await client.query("select set_config($1, $2, true)", [name, value]);
        const t0 = nowMs();
        const claimed = await claimDeliveries(client, claimOptions(limit));
        const ms = nowMs() - t0;
        await client.query("rollback");
        if (k >= 3) samples[i]!.push(ms);
        rows[i] = claimed.length;
      }
    }
  } finally {
    for (const client of clients) client.release();
  }
  return samples.map((s, i) => ({ ms: median(s), rows: rows[i]! }));
}

export async function measureBacklog(ctx: BenchContext, b: Backlog): Promise<BacklogRun> {
  const { backlogClaims, claimLimit } = ctx.opts;
  const small = await timeClaims(b.small, backlogClaims, claimLimit);
  const large = await timeClaims(b.large, backlogClaims, claimLimit);
  return {
    smallMs: Number(small.ms.toFixed(2)),
    largeMs: Number(large.ms.toFixed(2)),
    ratio: large.ms / small.ms,
    claimedRows: Math.min(small.rows, large.rows),
  };
}

export async function dropBacklog(b: Backlog): Promise<void> {
  await b.small.drop();
  await b.large.drop();
}
