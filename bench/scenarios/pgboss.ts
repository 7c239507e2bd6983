/**
 * Scenario 2 (and the peer half of 6): the same messages as jobs of pg-boss 10.4.2, worked
 * by a separate process (bench/children/pgboss-worker.ts) with an undici handler. The jobs
 * are inserted in one transaction while the worker polls; the rate is taken at the receiver
 * from its first to its last request, exactly as for hookrelay.
 */
import PgBoss from "pg-boss";
import { PGBOSS_SCHEMA } from "../lib/cluster.ts";
import { type BenchContext, deadlineFor } from "../lib/context.ts";
import { type CpuSpent, perThousand, startCpuMeter } from "../lib/cpu.ts";
import type { PgBossTuning } from "../lib/options.ts";
import { type Child, forkChild, stopChild } from "../lib/procs.ts";
import { makeMessages } from "../lib/seed.ts";
import { ratePerSecond } from "../lib/stats.ts";

const QUEUE = "webhooks";

export interface PgBossRun {
  rate: number;
  delivered: number;
  expected: number;
  tuning: PgBossTuning;
  /** CPU time from the insert's commit to the last request, in ms per 1,000 jobs, by group */
  cpuPerThousand: CpuSpent;
}

export async function runPgBoss(
  ctx: BenchContext,
  p: { messages: number; delayMs?: number; tuning?: PgBossTuning },
): Promise<PgBossRun> {
  const { receiver, opts } = ctx;
  const tuning = p.tuning ?? opts.pgboss;
  const db = await ctx.freshDb("pgboss");
  const boss = new PgBoss({
    connectionString: db.url,
    schema: PGBOSS_SCHEMA,
    max: 4,
    supervise: false,
    schedule: false,
    migrate: false,
  });
  boss.on("error", () => undefined);
  let worker: Child | null = null;
  try {
    await boss.start();
    await boss.createQueue(QUEUE);
    worker = forkChild("pgboss-worker.ts", [
      JSON.stringify({
        url: db.url,
        schema: PGBOSS_SCHEMA,
        queue: QUEUE,
        ...tuning,
        connectionsPerOrigin: opts.connectionsPerOrigin,
        secret: ctx.secret,
      }),
    ]);
    const w = worker;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`pg-boss worker not ready:\n${w.output()}`)),
        60_000,
      );
      w.proc.once("message", () => {
        clearTimeout(timer);
        resolve();
      });
      w.proc.once("exit", (code) =>
        reject(new Error(`pg-boss worker exited (${code}):\n${w.output()}`)),
      );
    });
    await receiver.configure({ delayMs: p.delayMs ?? 0, secret: ctx.secret });
    await receiver.reset();

    const messages = makeMessages(p.messages, receiver.urls.length);
    const jobs = messages.ids.map((id, i) => ({
      name: QUEUE,
      data: { id, url: receiver.urls[messages.endpoint[i]!]!, body: messages.payloads[i]! },
    }));
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      const inTx = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
      for (let start = 0; start < jobs.length; start += 10_000) {
        await boss.insert(jobs.slice(start, start + 10_000), { db: inTx });
      }
      await client.query("commit");
    } finally {
      client.release();
    }

    const workerPid = w.pid;
    const cpu = startCpuMeter({
      worker: () => [workerPid],
      postgres: () => ctx.cluster.pids(),
      receiver: () => [receiver.pid],
    });
    const minRate = p.delayMs ? 50 : 150;
    const s = await receiver.waitForHealthy(p.messages, deadlineFor(p.messages, minRate));
    const spent = cpu();
    if (s.healthy < p.messages)
      ctx.log(`  WARNING: pg-boss delivered only ${s.healthy}/${p.messages}`);
    return {
      rate: ratePerSecond(s.healthy, s.healthyFirst, s.healthyLast),
      delivered: s.healthy,
      expected: p.messages,
      tuning,
      cpuPerThousand: perThousand(spent, s.healthy),
    };
  } finally {
    if (worker) await stopChild(worker, 3_000);
    await boss.stop({ graceful: false, wait: true }).catch(() => undefined);
    await receiver.reset();
    await db.drop();
  }
}
