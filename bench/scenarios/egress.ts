/**
 * Scenario 18: what a forward proxy costs (docs/egress.md). Scenario 3's single-worker
 * delivery of the seeded backlog, twice in one run: directly, and with every request
 * through Debian's squid (HOOKRELAY_EGRESS_PROXY; CONNECT tunnels kept alive like direct
 * connections), started here on 127.0.0.1 by test/helpers/squid.ts. The figure is
 * proxied / direct. The order alternates from run to run, so neither side always runs on a
 * warmer machine. Skipped (no figures) where squid is not installed.
 */
import { type Squid, squidInstalled, startSquid } from "../../test/helpers/squid.ts";
import type { BenchContext } from "../lib/context.ts";
import { type DeliveryRun, runDelivery } from "./delivery.ts";

export interface EgressRun {
  direct: DeliveryRun;
  proxied: DeliveryRun;
  /** proxied.rate / direct.rate */
  ratio: number;
  /** CONNECT tunnels squid logged (each closed tunnel one line): > 0, or nothing went through it */
  tunnels: number;
}

export async function runEgress(ctx: BenchContext, run: number): Promise<EgressRun | undefined> {
  if (!squidInstalled) {
    ctx.log("  squid is not installed: skipped");
    return undefined;
  }
  const messages = ctx.opts.throughputMessages;
  let squid: Squid | undefined;
  try {
    squid = await startSquid();
    const proxy = squid.url;
    const side = async (mode: "direct" | "proxied") => {
      ctx.log(`  ${mode}: ${messages} messages, 1 worker`);
      return runDelivery(ctx, {
        workers: 1,
        messages,
        ...(mode === "proxied" && { env: { HOOKRELAY_EGRESS_PROXY: proxy } }),
      });
    };
    let direct: DeliveryRun;
    let proxied: DeliveryRun;
    if (run % 2 === 1) {
      direct = await side("direct");
      proxied = await side("proxied");
    } else {
      proxied = await side("proxied");
      direct = await side("direct");
    }
    // (the worker has stopped: its tunnels are closed, and squid logs a tunnel when it closes)
    const tunnels = (await squid.logUntil((lines) => lines.length > 0)).length;
    ctx.log(`  squid logged ${tunnels} CONNECT tunnels`);
    if (tunnels === 0) throw new Error("scenario 18: nothing went through squid");
    return {
      direct,
      proxied,
      ratio: direct.rate > 0 ? proxied.rate / direct.rate : 0,
      tunnels,
    };
  } finally {
    await squid?.stop();
  }
}
