/**
 * Scenario 5: ingest. Many concurrent clients (an undici Pool, one request in flight per
 * connection) POST one message per request to an API process as fast as it answers, for a
 * fixed time; no worker runs, so the figure is the API and the database alone. hookrelay has
 * no batch ingest endpoint, so the batch figure is reported as not applicable.
 */

import { Pool } from "undici";
import { createApiKey } from "../../src/api/auth.ts";
import type { BenchContext, FreshDb } from "../lib/context.ts";
import { type CpuSpent, perThousand, startCpuMeter } from "../lib/cpu.ts";
import { type HookrelayProcess, startHookrelay, stopChild } from "../lib/procs.ts";
import { createTenants, EVENT_TYPE, payloadFor, type Tenant } from "../lib/seed.ts";
import { nowMs } from "../lib/stats.ts";

export interface IngestRun {
  rate: number;
  accepted: number;
  errors: number;
  /** messages the database holds afterwards (must equal accepted + warm-up) */
  stored: number;
  clients: number;
  /** CPU ms per 1,000 accepted messages: the API, PostgreSQL and the load generator */
  cpuPerThousand: CpuSpent;
}

/**
 * On a fresh database of its own (dropped afterwards), or on `on` (scenario 19: a database
 * with a history, whose tenants it posts to; kept).
 */
export async function runIngest(
  ctx: BenchContext,
  on?: { db: FreshDb; tenants: Tenant[] },
): Promise<IngestRun> {
  const { receiver, opts } = ctx;
  const db = on?.db ?? (await ctx.freshDb("ingest"));
  let api: HookrelayProcess | null = null;
  let pool: Pool | null = null;
  try {
    const tenants = on?.tenants ?? (await createTenants(db.pool, receiver.urls, ctx.secret));
    const { key } = await createApiKey(db.pool, { role: "admin" }, "bench");
    api = await startHookrelay("api", db.url);
    const client = new Pool(api.url!, {
      connections: opts.ingestClients,
      keepAliveTimeout: 10_000,
    });
    pool = client;
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    let seq = 0;
    let accepted = 0;
    let errors = 0;

    async function loop(until: number, count: boolean): Promise<void> {
      while (Date.now() < until) {
        const i = seq++;
        const tenant = tenants[i % tenants.length]!;
        try {
          const res = await client.request({
            path: `/api/v1/app/${tenant.appId}/msg`,
            method: "POST",
            headers,
            body: `{"eventType":"${EVENT_TYPE}","payload":${payloadFor(i)}}`,
            signal: AbortSignal.timeout(30_000),
          });
          await res.body.dump();
          if (!count) continue;
          if (res.statusCode === 202) accepted++;
          else errors++;
        } catch {
          if (count) errors++;
        }
      }
    }
    const all = (ms: number, count: boolean) => {
      const until = Date.now() + ms;
      return Promise.all(Array.from({ length: opts.ingestClients }, () => loop(until, count)));
    };

    await all(opts.quick ? 100 : 2_000, false); // warm-up
    const apiPid = api.pid;
    const cpu = startCpuMeter({
      api: () => [apiPid],
      postgres: () => ctx.cluster.pids(),
      client: () => [process.pid],
    });
    const t0 = nowMs();
    await all(opts.ingestSeconds * 1000, true);
    const elapsed = nowMs() - t0;
    const spent = cpu();
    // (on a history: the messages of the last minute, where ingest's are)
    const { rows } = await db.pool.query(
      "select count(*)::int as n from messages where created_at > now() - interval '1 minute'",
    );
    return {
      rate: (accepted * 1000) / elapsed,
      accepted,
      errors,
      stored: rows[0].n,
      clients: opts.ingestClients,
      cpuPerThousand: perThousand(spent, accepted),
    };
  } finally {
    await pool?.close();
    if (api) await stopChild(api, 6_000);
    if (!on) await db.drop();
  }
}
