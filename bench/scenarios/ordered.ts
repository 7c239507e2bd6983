/**
 * Scenario 13: ordered delivery's throughput (docs/delivery.md, "Ordering"), three
 * deliveries of a seeded backlog by one worker in one run, like scenario 3's:
 *
 * - unordered: `--ordered-messages` messages over the 100 endpoints, no key;
 * - 1,000 keys: the same count, message i under key i % 1000 on endpoint i % 100, so each
 *   endpoint has 10 keys and at most 10 of its requests can be in flight. The figure is its
 *   rate over the unordered one in the same run (target >= 0.8);
 * - 10 keys: 10 keys in all, one on each of endpoints 0-9, so at most 10 requests are
 *   outstanding: its rate is bounded by round trips (claim, request, result write), about
 *   10 / (one cycle of a key). Stopped after a fixed time, with the receiver latency the
 *   worker recorded (attempts.latency_ms) beside it to compare.
 *
 * Each ordered run also checks every key's receipt order against its send order.
 */
import type { BenchContext } from "../lib/context.ts";
import { type DeliveryRun, runDelivery } from "./delivery.ts";

export interface OrderedRun {
  unordered: DeliveryRun;
  manyKeys: DeliveryRun;
  fewKeys: DeliveryRun;
  /** manyKeys.rate / unordered.rate */
  ratio: number;
  /** ms one key takes per message in the few-keys run: keys / rate */
  fewKeysCycleMs: number;
}

export async function runOrdered(ctx: BenchContext): Promise<OrderedRun> {
  const { opts } = ctx;
  const messages = opts.orderedMessages;
  ctx.log(`  unordered: ${messages} messages`);
  const unordered = await runDelivery(ctx, { workers: 1, messages });
  ctx.log(`  ordered: ${messages} messages under ${opts.orderedManyKeys} keys`);
  const manyKeys = await runDelivery(ctx, {
    workers: 1,
    messages,
    orderingKeys: opts.orderedManyKeys,
  });
  ctx.log(
    `  ordered: up to ${opts.orderedFewMessages} messages under ${opts.orderedFewKeys} keys, at most ${opts.orderedFewSeconds} s`,
  );
  const fewKeys = await runDelivery(ctx, {
    workers: 1,
    messages: opts.orderedFewMessages,
    orderingKeys: opts.orderedFewKeys,
    maxWaitMs: opts.orderedFewSeconds * 1000,
  });
  for (const [name, r] of [
    ["1,000 keys", manyKeys],
    ["10 keys", fewKeys],
  ] as const) {
    if (r.healthy < r.expectedHealthy) {
      ctx.log(`  ${name}: ${r.healthy}/${r.expectedHealthy} delivered before the deadline`);
    }
    if (r.orderViolations) ctx.log(`  WARNING ${name}: ${r.orderViolations} out of key order`);
  }
  return {
    unordered,
    manyKeys,
    fewKeys,
    ratio: manyKeys.rate / unordered.rate,
    fewKeysCycleMs: (opts.orderedFewKeys * 1000) / fewKeys.rate,
  };
}
