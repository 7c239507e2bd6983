/**
 * `npm run bench -- --tune-pgboss`: measures pg-boss 10.4.2 with a grid of `work()` loop
 * counts, batch sizes and the notify-when-full option, with a fast and with a 50 ms
 * receiver, and prints the results. The default tuning in bench/lib/options.ts is the best
 * of this sweep whose requests in flight (loops x batchSize) do not exceed hookrelay's
 * (HOOKRELAY_WORKER_CONCURRENCY, 1024 by default).
 */
import type { BenchContext } from "../lib/context.ts";
import type { PgBossTuning } from "../lib/options.ts";
import { runPgBoss } from "./pgboss.ts";

const GRID: Array<[workers: number, batchSize: number, notifyWhenFull: boolean]> = [
  // 256 in flight
  [2, 128, true],
  [1, 256, true],
  [2, 128, false],
  // 512
  [4, 128, true],
  [2, 256, true],
  // 1024
  [8, 128, true],
  [4, 256, true],
  [16, 64, true],
  [4, 256, false],
  [8, 128, false],
  // 2048
  [8, 256, true],
];

export async function sweepPgBoss(ctx: BenchContext): Promise<string> {
  const messages = ctx.opts.quick ? 1_000 : 10_000;
  const slowMessages = ctx.opts.quick ? 300 : 5_000;
  const lines = [
    "| work() loops | batchSize | in flight | notifyWhenFull | fast receiver /s | 50 ms receiver /s |",
    "|---|---|---|---|---|---|",
  ];
  for (const [workers, batchSize, notifyWhenFull] of ctx.opts.quick ? GRID.slice(0, 2) : GRID) {
    const tuning: PgBossTuning = {
      workers,
      batchSize,
      pollingIntervalSeconds: 0.5,
      notifyWhenFull,
    };
    ctx.log(`sweep: ${JSON.stringify(tuning)}`);
    const fast = await runPgBoss(ctx, { messages, tuning });
    const slow = await runPgBoss(ctx, {
      messages: slowMessages,
      delayMs: ctx.opts.slowDelayMs,
      tuning,
    });
    const line = `| ${workers} | ${batchSize} | ${workers * batchSize} | ${notifyWhenFull} | ${Math.round(fast.rate)} | ${Math.round(slow.rate)} |`;
    ctx.log(line);
    lines.push(line);
  }
  return lines.join("\n");
}
