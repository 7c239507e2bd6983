/**
 * Scenario 1, the ceiling: the same messages POSTed with bare undici from one Node process
 * (this one, otherwise idle), no database and no signing. Same request shape, same in-flight
 * count as a hookrelay worker (256) and the same keep-alive Agent settings as its sender
 * (32 sockets per origin), to the same 100 endpoints.
 */
import { Agent } from "undici";
import { type BenchContext, deadlineFor } from "../lib/context.ts";
import { type CpuSpent, perThousand, startCpuMeter } from "../lib/cpu.ts";
import { makeMessages } from "../lib/seed.ts";
import { ratePerSecond } from "../lib/stats.ts";

export interface CeilingRun {
  rate: number;
  delivered: number;
  errors: number;
  /** CPU ms per 1,000 requests: this (client) process and the receiver */
  cpuPerThousand: CpuSpent;
}

export async function runCeiling(ctx: BenchContext, count: number): Promise<CeilingRun> {
  const { receiver, opts } = ctx;
  const targets = receiver.urls.map((u) => {
    const url = new URL(u);
    return { origin: url.origin, path: url.pathname };
  });
  const messages = makeMessages(count, targets.length);
  const agent = new Agent({
    connections: opts.connectionsPerOrigin,
    keepAliveTimeout: 10_000,
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  await receiver.configure({});
  await receiver.reset();
  const deadline = Date.now() + deadlineFor(count, 500);
  let next = 0;
  let errors = 0;
  async function loop(): Promise<void> {
    while (next < count && Date.now() < deadline) {
      const i = next++;
      const target = targets[messages.endpoint[i]!]!;
      try {
        const res = await agent.request({
          origin: target.origin,
          path: target.path,
          method: "POST",
          headers: { "content-type": "application/json", "webhook-id": messages.ids[i]! },
          body: messages.payloads[i]!,
          signal: AbortSignal.timeout(15_000),
        });
        await res.body.dump();
        if (res.statusCode !== 200) errors++;
      } catch {
        errors++;
      }
    }
  }
  try {
    const cpu = startCpuMeter({ client: () => [process.pid], receiver: () => [receiver.pid] });
    await Promise.all(Array.from({ length: opts.concurrency }, loop));
    const s = await receiver.waitForHealthy(count, 10_000);
    const spent = cpu();
    return {
      rate: ratePerSecond(s.healthy, s.healthyFirst, s.healthyLast),
      delivered: s.healthy,
      errors,
      cpuPerThousand: perThousand(spent, s.healthy),
    };
  } finally {
    await agent.close();
    await receiver.reset();
  }
}
