/**
 * Scenario 14: what adaptive concurrency costs (docs/adaptive-concurrency.md). Scenario 3's
 * single-worker delivery of the seeded backlog (unordered, over the 100 endpoints), twice in
 * one run: with the limiter on (the default) and off (HOOKRELAY_ADAPTIVE_CONCURRENCY=off:
 * maxInFlight alone). The figure is on / off (target >= 0.95). The order alternates from run
 * to run, so neither side always runs on a warmer machine.
 */
import type { BenchContext } from "../lib/context.ts";
import { type DeliveryRun, runDelivery } from "./delivery.ts";

export interface AdaptiveRun {
  on: DeliveryRun;
  off: DeliveryRun;
  /** on.rate / off.rate */
  ratio: number;
}

export async function runAdaptive(ctx: BenchContext, run: number): Promise<AdaptiveRun> {
  const messages = ctx.opts.throughputMessages;
  const side = async (mode: "on" | "off") => {
    ctx.log(`  limiter ${mode}: ${messages} messages, 1 worker`);
    return runDelivery(ctx, {
      workers: 1,
      messages,
      env: { HOOKRELAY_ADAPTIVE_CONCURRENCY: mode },
    });
  };
  let on: DeliveryRun;
  let off: DeliveryRun;
  if (run % 2 === 1) {
    on = await side("on");
    off = await side("off");
  } else {
    off = await side("off");
    on = await side("on");
  }
  return { on, off, ratio: off.rate > 0 ? on.rate / off.rate : 0 };
}
