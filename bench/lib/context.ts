/** What every scenario gets: options, the cluster, the receiver, and fresh databases. */

import { makePool, type Pool } from "../../src/db/pool.ts";
import { generateSecret } from "../../src/delivery/sign.ts";
import type { Cluster } from "./cluster.ts";
import type { BenchOptions } from "./options.ts";
import type { ReceiverControl } from "./receiver.ts";

export interface FreshDb {
  name: string;
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

export interface BenchContext {
  opts: BenchOptions;
  cluster: Cluster;
  receiver: ReceiverControl;
  /** the signing secret of every bench endpoint (the receiver verifies samples with it) */
  secret: string;
  log(message: string): void;
  /** A database cloned from the migrated template, with a small pool for the bench itself. */
  freshDb(tag: string): Promise<FreshDb>;
}

export function makeContext(
  opts: BenchOptions,
  cluster: Cluster,
  receiver: ReceiverControl,
): BenchContext {
  let counter = 0;
  const started = Date.now();
  return {
    opts,
    cluster,
    receiver,
    secret: generateSecret(),
    log(message) {
      const t = ((Date.now() - started) / 1000).toFixed(1).padStart(6);
      process.stderr.write(`[bench ${t}s] ${message}\n`);
    },
    async freshDb(tag) {
      const name = `bench_${tag.replace(/\W/g, "_")}_${++counter}`;
      const url = await cluster.createDb(name);
      const pool = makePool({ connectionString: url, max: 4, applicationName: "hookrelay-bench" });
      return {
        name,
        url,
        pool,
        async drop() {
          await pool.end();
          await cluster.dropDb(name);
        },
      };
    },
  };
}

/** Deadline for delivering `count` requests at no less than `minRate`/s, plus slack. */
export const deadlineFor = (count: number, minRate: number, slackMs = 30_000) =>
  Math.round((count / minRate) * 1000 + slackMs);
