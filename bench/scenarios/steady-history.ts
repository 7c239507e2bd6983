/**
 * Scenario 19's history: `--steady-messages` messages (each with its delivery) and
 * `--steady-attempts` attempts spread evenly over the `--steady-days` days before today
 * (UTC), seeded a day per transaction on two connections at once with the secondary indexes
 * dropped and built again at the end, then VACUUM ANALYZE (what autovacuum would have done
 * by then). Each step's time is kept: the seeding is part of the figures.
 */

import { ensureAttemptPartitions } from "../../src/ops/attempt-partitions.ts";
import { rollUpCharts } from "../../src/ops/chart-rollup.ts";
import { ensureMessagePartitions } from "../../src/ops/message-partitions.ts";
import type { BenchContext, FreshDb } from "../lib/context.ts";
import {
  createIndexes,
  dropSecondaryIndexes,
  historySizes,
  seedSpan,
  type TableSize,
} from "../lib/history-seed.ts";
import { createTenants, type Tenant } from "../lib/seed.ts";
import { nowMs } from "../lib/stats.ts";

export const DAY = 86_400_000;

export interface SteadyHistory {
  db: FreshDb;
  tenants: Tenant[];
  days: number;
  /** epoch ms of the first seeded day (UTC midnight) */
  first: number;
  messages: number;
  attempts: number;
  /** ms: rows inserted, indexes built, VACUUM ANALYZE, chart rollup */
  seed: { rowsMs: number; indexMs: number; vacuumMs: number; rollupMs: number };
  /** after seeding, summed over partitions */
  sizes: Record<string, TableSize>;
  /** runs so far (each purges two days: one by retention during delivery, one measured) */
  runs: number;
}

export async function prepareSteadyHistory(ctx: BenchContext): Promise<SteadyHistory> {
  const { steadyDays: days, steadyMessages, steadyAttempts } = ctx.opts;
  const perDay = Math.max(1, Math.floor(steadyMessages / days));
  const attemptsPerMessage = Math.max(1, Math.round(steadyAttempts / (perDay * days)));
  const db = await ctx.freshDb("steady");
  const pool = db.pool;
  const tenants = await createTenants(pool, ctx.receiver.urls, ctx.secret);
  const today = Date.now() - (Date.now() % DAY);
  const first = today - days * DAY;
  // the days' partitions and today's and tomorrow's, as maintenance would have made them:
  // attempts', and messages' and deliveries' (the seeded rows carry their message_ms)
  await ensureAttemptPartitions(pool, { interval: "day", aheadMs: (days + 1) * DAY }, 0, first);
  await ensureMessagePartitions(pool, { interval: "day", aheadMs: (days + 1) * DAY }, 0, first);
  const t0 = nowMs();
  const defs = await dropSecondaryIndexes(pool);
  let next = 0;
  const seeder = async () => {
    for (let d = next++; d < days; d = next++) {
      const fromMs = first + d * DAY;
      await seedSpan(pool, tenants, {
        fromMs,
        toMs: fromMs + DAY,
        messages: perDay,
        attemptsPerMessage,
        firstEventNumber: d * perDay,
      });
      ctx.log(
        `19 steady: day ${d + 1}/${days} seeded (${perDay} messages, ${perDay * attemptsPerMessage} attempts), ${Math.round((nowMs() - t0) / 1000)} s`,
      );
    }
  };
  await Promise.all([seeder(), seeder()]);
  const rowsMs = nowMs() - t0;
  const t1 = nowMs();
  // two lanes, as the seeding: attempts' indexes in one, the others' in the other
  const isAttempts = (def: string) => / ON public\.attempts /.test(def);
  await Promise.all([
    createIndexes(pool, defs.filter(isAttempts)),
    createIndexes(
      pool,
      defs.filter((d) => !isAttempts(d)),
    ),
  ]);
  const indexMs = nowMs() - t1;
  ctx.log(`19 steady: ${defs.length} indexes built in ${Math.round(indexMs / 1000)} s`);
  const t2 = nowMs();
  await Promise.all([
    pool.query("vacuum (analyze) attempts"),
    pool.query("vacuum (analyze) messages, deliveries"),
  ]);
  const vacuumMs = nowMs() - t2;
  // the dashboard's charts read the rollup the maintenance task keeps (a day and an hour)
  const t3 = nowMs();
  await rollUpCharts(pool, { keepMs: 25 * 3_600_000, maxSteps: 100 });
  const rollupMs = nowMs() - t3;
  const sizes = await historySizes(pool);
  return {
    db,
    tenants,
    days,
    first,
    messages: perDay * days,
    attempts: perDay * days * attemptsPerMessage,
    seed: { rowsMs, indexMs, vacuumMs, rollupMs },
    sizes,
    runs: 0,
  };
}
