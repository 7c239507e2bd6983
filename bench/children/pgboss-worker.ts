/**
 * The peer: a pg-boss 10.4.2 worker process whose handler POSTs each job with undici, signed
 * the same way hookrelay signs (Standard Webhooks HMAC), through the same Agent settings as
 * hookrelay's sender. One `work()` loop fetches `batchSize` jobs, sends them concurrently and
 * completes the batch; `workers` loops run side by side.
 *
 * pg-boss' loop sleeps for the rest of its polling interval (0.5 s minimum) after every
 * batch. With `notifyWhenFull` the handler calls the public `notifyWorker(id)` after a full
 * batch, so a loop with more work waiting fetches again at once (tried in the sweep).
 *
 * Argument: JSON { url, schema, queue, workers, batchSize, pollingIntervalSeconds,
 * notifyWhenFull, connectionsPerOrigin, secret }. Says { ready: true } over IPC.
 */
import { createHmac } from "node:crypto";
import PgBoss from "pg-boss";
import { Agent } from "undici";

interface Config {
  url: string;
  schema: string;
  queue: string;
  workers: number;
  batchSize: number;
  pollingIntervalSeconds: number;
  notifyWhenFull: boolean;
  connectionsPerOrigin: number;
  secret: string;
}

interface JobData {
  id: string;
  url: string;
  body: string;
}

const cfg = JSON.parse(process.argv[2] ?? "{}") as Config;
const key = Buffer.from(cfg.secret.replace(/^whsec_/, ""), "base64");
const agent = new Agent({
  connections: cfg.connectionsPerOrigin,
  keepAliveTimeout: 10_000,
  headersTimeout: 0,
  bodyTimeout: 0,
});
const targets = new Map<string, { origin: string; path: string }>();

async function post(data: JobData): Promise<void> {
  let target = targets.get(data.url);
  if (!target) {
    const u = new URL(data.url);
    target = { origin: u.origin, path: u.pathname + u.search };
    targets.set(data.url, target);
  }
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = createHmac("sha256", key)
    .update(`${data.id}.${timestamp}.`)
    .update(data.body)
    .digest("base64");
  const res = await agent.request({
    origin: target.origin,
    path: target.path,
    method: "POST",
    headers: {
      "content-type": "application/json",
      "webhook-id": data.id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": `v1,${signature}`,
    },
    body: data.body,
    signal: AbortSignal.timeout(15_000),
  });
  await res.body.dump();
  if (res.statusCode >= 300) throw new Error(`HTTP ${res.statusCode}`);
}

// Same pool size as a hookrelay process (HOOKRELAY_DB_POOL_SIZE default 10).
const boss = new PgBoss({
  connectionString: cfg.url,
  schema: cfg.schema,
  max: 10,
  schedule: false,
});
boss.on("error", (err) => process.stderr.write(`pg-boss error: ${String(err)}\n`));
await boss.start();

for (let w = 0; w < cfg.workers; w++) {
  const self = { id: "" };
  self.id = await boss.work<JobData>(
    cfg.queue,
    { batchSize: cfg.batchSize, pollingIntervalSeconds: cfg.pollingIntervalSeconds },
    async (jobs) => {
      await Promise.all(jobs.map((job) => post(job.data)));
      if (cfg.notifyWhenFull && jobs.length === cfg.batchSize && self.id)
        boss.notifyWorker(self.id);
    },
  );
}

const stop = () => {
  void boss.stop({ graceful: false, wait: false }).finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 2_000).unref();
};
process.on("SIGTERM", stop);
process.on("disconnect", stop);
process.send?.({ ready: true });
