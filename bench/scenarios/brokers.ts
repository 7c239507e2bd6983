/**
 * Scenario 17: broker destinations (docs/destinations.md). For RabbitMQ and NATS JetStream,
 * each where its server is installed (started here on 127.0.0.1 by test/helpers/rabbitmq.ts
 * and nats.ts, stopped at the end), in the same run:
 *
 * - bare: the ceiling. A bare client (amqplib confirm channels; the nats client's JetStream
 *   publish) publishes the same messages hookrelay will (the same payloads, the same
 *   Standard Webhooks headers and message id, persistent), over one connection per
 *   endpoint with at most `inFlight` publishes awaiting their confirm or ack on each, as
 *   many as hookrelay may have in flight per endpoint. Rate: first publish to last confirm.
 * - hookrelay: one worker process delivers the same number of messages, seeded at once, to
 *   as many broker endpoints (each `maxInFlight` = `inFlight`). Rate: from its first publish
 *   to its last confirm or ack (attempts.started_at + latency_ms), once every delivery is
 *   `delivered` in the database.
 *
 * Beside the rates, the CPU each side spent per 1,000 messages (bench/lib/cpu.ts): the bare
 * client's (this process, during its run), hookrelay's worker's and PostgreSQL's (from the
 * seed to the last delivery), which move far less with the machine's load than the rates,
 * and the broker's own in each run (its server's processes, from /proc): alike in both, so
 * the rates differ by how much of the machine the broker gets beside the worker and
 * PostgreSQL (docs/performance.md, "RabbitMQ's own CPU per message").
 *
 * hookrelay runs twice: as configured by default (each endpoint's adaptive in-flight limit
 * on, docs/adaptive-concurrency.md, which a broker whose confirms slow down under the
 * machine's load cuts), then with that limit off (a fixed window of `inFlight`, as the bare
 * client's). The first is the figure held to the target; the second says how much of the
 * gap the adaptive limit is. The endpoints' limits at the end are logged.
 *
 * The figure is hookrelay / bare (target >= 0.6). Every message lands in one durable queue
 * (the default exchange, routing key = the queue) or one file-backed stream.
 */
import { performance } from "node:perf_hooks";
import { connect as amqpConnect, type ChannelModel } from "amqplib";
import { type NatsConnection, headers as natsHeaders } from "nats";
import { signatureHeader } from "../../src/delivery/sign.ts";
import { signingKeyOf } from "../../src/delivery/signing-key.ts";
import { type NatsServer, natsInstalled, startNats } from "../../test/helpers/nats.ts";
import { type RabbitMq, rabbitmqInstalled, startRabbitMq } from "../../test/helpers/rabbitmq.ts";
import { resetStatements, topStatements } from "../lib/cluster.ts";
import type { BenchContext } from "../lib/context.ts";
import { processGroup, startCpuMeter } from "../lib/cpu.ts";
import { logEndpointLimits } from "../lib/endpoint-limits.ts";
import { formatPgCpuByKind, startPgCpuByKind } from "../lib/pg-cpu-kinds.ts";
import { startHookrelay, stopChild } from "../lib/procs.ts";
import { createTenants, makeMessages, seedMessages } from "../lib/seed.ts";

export interface BrokerRun {
  messages: number;
  endpoints: number;
  inFlight: number;
  /** bare client publishes confirmed per second */
  bare: number;
  /** hookrelay deliveries confirmed per second */
  hookrelay: number;
  /** hookrelay / bare */
  ratio: number;
  /** deliveries left undelivered when the wait ended (0 in a good run) */
  undelivered: number;
  /** median attempts.latency_ms hookrelay recorded: publish to confirm or ack */
  publishP50Ms: number;
  /**
   * hookrelay again with the endpoints' adaptive in-flight limit off (a fixed window of
   * `inFlight`, as the bare client's): its rate and its ratio to the bare client's
   */
  fixedWindow: number;
  fixedWindowRatio: number;
  /** CPU ms per 1,000 messages: the bare client, hookrelay's worker, PostgreSQL */
  bareCpuMs: number;
  workerCpuMs: number;
  postgresCpuMs: number;
  /**
   * the broker's own CPU ms per 1,000 messages while the bare client published, and during
   * hookrelay's run: alike, it does the same work per message for both; what differs is how
   * much of the machine it gets beside hookrelay's worker and PostgreSQL
   */
  brokerBareCpuMs: number;
  brokerCpuMs: number;
}

export interface BrokersRun {
  amqp?: BrokerRun;
  nats?: BrokerRun;
}

const QUEUE = "hookrelay-bench";
const SUBJECT = "bench.orders";
const STREAM = "BENCH";

/** The messages' ids, bodies and headers as hookrelay publishes them. */
function messagesLike(count: number, secret: string) {
  const key = signingKeyOf(secret);
  const m = makeMessages(count, 1);
  const ts = Math.floor(Date.now() / 1000);
  return m.payloads.map((body, i) => ({
    id: m.ids[i]!,
    body: Buffer.from(body),
    headers: {
      "content-type": "application/json",
      "webhook-id": m.ids[i]!,
      "webhook-timestamp": String(ts),
      "webhook-signature": signatureHeader([key], m.ids[i]!, ts, body),
    },
  }));
}

/** Splits `items` over `lanes` and runs each lane with at most `window` at once. */
async function lanes<T>(
  items: T[],
  laneCount: number,
  window: number,
  send: (lane: number, item: T) => Promise<void>,
): Promise<void> {
  await Promise.all(
    Array.from({ length: laneCount }, async (_, lane) => {
      const mine = items.filter((_, i) => i % laneCount === lane);
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(window, mine.length) }, async () => {
          while (next < mine.length) await send(lane, mine[next++]!);
        }),
      );
    }),
  );
}

async function bareAmqp(rmq: RabbitMq, ctx: BenchContext, n: number, e: number, w: number) {
  const msgs = messagesLike(n, ctx.secret);
  const conns: ChannelModel[] = [];
  for (let i = 0; i < e; i++) conns.push(await amqpConnect(rmq.url()));
  const channels = await Promise.all(conns.map((c) => c.createConfirmChannel()));
  const broker = startCpuMeter({ broker: () => processGroup(rmq.processGroup) });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await lanes(msgs, e, w, (lane, m) => {
    return new Promise<void>((resolve, reject) =>
      channels[lane]!.publish(
        "",
        QUEUE,
        m.body,
        { messageId: m.id, headers: m.headers, persistent: true, mandatory: true },
        (err: unknown) => (err ? reject(err) : resolve()),
      ),
    );
  });
  const seconds = (performance.now() - t0) / 1000;
  const cpuMs = cpuMsSince(cpu0);
  const brokerMs = broker().ms.broker!;
  for (const c of conns) await c.close();
  return { rate: n / seconds, cpuMs: (cpuMs * 1000) / n, brokerCpuMs: (brokerMs * 1000) / n };
}

async function bareNats(nats: NatsServer, ctx: BenchContext, n: number, e: number, w: number) {
  const msgs = messagesLike(n, ctx.secret);
  const conns: NatsConnection[] = [];
  for (let i = 0; i < e; i++) conns.push(await nats.client());
  const streams = conns.map((c) => c.jetstream());
  const broker = startCpuMeter({ broker: () => natsPids(nats) });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await lanes(msgs, e, w, async (lane, m) => {
    const h = natsHeaders();
    for (const [k, v] of Object.entries(m.headers)) h.set(k, v);
    await streams[lane]!.publish(SUBJECT, m.body, { msgID: m.id, headers: h });
  });
  const rate = n / ((performance.now() - t0) / 1000);
  const brokerMs = broker().ms.broker!;
  return { rate, cpuMs: (cpuMsSince(cpu0) * 1000) / n, brokerCpuMs: (brokerMs * 1000) / n };
}

const natsPids = (nats: NatsServer): number[] => {
  const pid = nats.pid();
  return pid === null ? [] : [pid];
};

/** This process's CPU ms (user + system) since `before`. */
function cpuMsSince(before: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

/** hookrelay delivering `n` messages to `e` endpoints at `url`; deliveries per second. */
async function viaHookrelay(
  ctx: BenchContext,
  tag: string,
  url: string,
  password: string,
  n: number,
  e: number,
  w: number,
  adaptive: "on" | "off",
  brokerPids: () => number[],
): Promise<{
  rate: number;
  undelivered: number;
  publishP50Ms: number;
  workerCpuMs: number;
  postgresCpuMs: number;
  brokerCpuMs: number;
}> {
  const db = await ctx.freshDb(`brokers_${tag}`);
  try {
    const tenants = await createTenants(db.pool, Array(e).fill(url), ctx.secret);
    await db.pool.query(
      `update endpoints set destination_kind = $1::text, destination_secret = $2::text,
              max_in_flight = $3::integer, adaptive_concurrency = $4::text`,
      [tag, password, w, adaptive],
    );
    const worker = await startHookrelay("worker", db.url);
    try {
      const m = makeMessages(n, e);
      await seedMessages(db.pool, tenants, m);
      await resetStatements(ctx.cluster);
      const cpu = startCpuMeter({
        worker: () => [worker.pid],
        postgres: () => ctx.cluster.pids(),
        broker: brokerPids,
      });
      const pgKinds = startPgCpuByKind(() => ctx.cluster.pids(), db.pool);
      const deadline = Date.now() + Math.max(60_000, n * 5);
      let delivered = 0;
      // a light poll (one count every 500 ms) beside the worker; the rate comes from the
      // attempts themselves: first publish to last confirm, as the bare client's
      while (Date.now() < deadline) {
        const { rows } = await db.pool.query(
          "select count(*)::int as n from deliveries where status = 'delivered'",
        );
        delivered = rows[0].n;
        if (delivered >= n) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const spent = cpu();
      // where PostgreSQL's share of a delivery goes: by process, then by statement
      ctx.log(`  PostgreSQL CPU per 1,000 by process: ${formatPgCpuByKind(await pgKinds(), n)}`);
      for (const t of await topStatements(ctx.cluster, 5))
        ctx.log(
          `    ${t.calls} x ${t.meanMs} ms (${t.totalMs} ms, ${t.rowsPerCall} rows a call): ${t.query.slice(0, 90)}`,
        );
      // what held hookrelay's window: each endpoint's adaptive in-flight limit at the end
      await logEndpointLimits(ctx, db.pool);
      const { rows } = await db.pool.query(
        `select extract(epoch from max(started_at + latency_ms * interval '1 millisecond')
                                   - min(started_at))::float8 as seconds,
                percentile_cont(0.5) within group (order by latency_ms) as p50,
                avg(latency_ms)::float8 as publish_ms,
                avg(extract(epoch from created_at - started_at) * 1000 - latency_ms)::float8
                  as write_wait_ms
         from attempts where outcome = 'success'`,
      );
      // where a row's in-flight room goes: its publish, then the wait for its result's
      // write (created_at is the writing transaction's start); by Little's law the
      // publishes outstanding on average, against the window the endpoints allow
      const r = rows[0];
      const rate = delivered / Math.max(0.001, r.seconds);
      const publishMs = Number(r.publish_ms ?? 0);
      const writeWaitMs = Number(r.write_wait_ms ?? 0);
      ctx.log(
        `  publish ${publishMs.toFixed(1)} ms on average, then ${writeWaitMs.toFixed(1)} ms until its result was written; ${Math.round((rate * publishMs) / 1000)} publishes outstanding on average of the ${e * w} the endpoints allow`,
      );
      return {
        rate,
        undelivered: n - delivered,
        publishP50Ms: Number(rows[0].p50),
        workerCpuMs: (spent.ms.worker! * 1000) / Math.max(1, delivered),
        postgresCpuMs: (spent.ms.postgres! * 1000) / Math.max(1, delivered),
        brokerCpuMs: (spent.ms.broker! * 1000) / Math.max(1, delivered),
      };
    } finally {
      await stopChild(worker);
    }
  } finally {
    await db.drop();
  }
}

/** One broker's figures from its bare run and hookrelay's. */
function figures(
  bare: { rate: number; cpuMs: number; brokerCpuMs: number },
  run: Awaited<ReturnType<typeof viaHookrelay>>,
  fixed: Awaited<ReturnType<typeof viaHookrelay>>,
): Omit<BrokerRun, "messages" | "endpoints" | "inFlight"> {
  return {
    bare: bare.rate,
    bareCpuMs: bare.cpuMs,
    brokerBareCpuMs: bare.brokerCpuMs,
    hookrelay: run.rate,
    ratio: run.rate / bare.rate,
    ...run,
    // (a fixed window's run leaves undelivered rows too: they count)
    undelivered: run.undelivered + fixed.undelivered,
    fixedWindow: fixed.rate,
    fixedWindowRatio: fixed.rate / bare.rate,
  };
}

export async function runBrokers(ctx: BenchContext): Promise<BrokersRun> {
  const { quick } = ctx.opts;
  const n = quick ? 200 : ctx.opts.brokerMessages;
  const e = quick ? 2 : 10;
  const w = quick ? 20 : 100;
  const out: BrokersRun = {};
  const shape = { messages: n, endpoints: e, inFlight: w };

  if (natsInstalled) {
    const nats = await startNats();
    try {
      const manager = await (await nats.client()).jetstreamManager();
      const fresh = async () => {
        await manager.streams.delete(STREAM).catch(() => false);
        await manager.streams.add({ name: STREAM, subjects: ["bench.>"] });
      };
      await fresh();
      const natsBroker = () => natsPids(nats);
      ctx.log(`  NATS JetStream: bare client, ${n} messages`);
      const bare = await bareNats(nats, ctx, n, e, w);
      await fresh();
      ctx.log(`  NATS JetStream: hookrelay, ${n} messages`);
      const url = `nats://${nats.user}@127.0.0.1:${nats.port}?subject=${SUBJECT}&stream=${STREAM}`;
      const run = await viaHookrelay(ctx, "nats", url, nats.password, n, e, w, "on", natsBroker);
      await fresh();
      ctx.log(`  NATS JetStream: hookrelay, adaptive in-flight limit off, ${n} messages`);
      const fixed = await viaHookrelay(ctx, "nats", url, nats.password, n, e, w, "off", natsBroker);
      out.nats = { ...shape, ...figures(bare, run, fixed) };
    } finally {
      await nats.stop();
    }
  } else ctx.log("  NATS JetStream: nats-server not installed, skipped");

  // RabbitMQ takes 10-20 s to start: the smoke test (--quick) leaves it out
  if (rabbitmqInstalled && !quick) {
    const rmq = await startRabbitMq();
    try {
      const admin = await (await rmq.client()).createChannel();
      await admin.assertQueue(QUEUE, { durable: true });
      await admin.purgeQueue(QUEUE);
      const rabbitPids = () => processGroup(rmq.processGroup);
      ctx.log(`  RabbitMQ: bare client, ${n} messages`);
      const bare = await bareAmqp(rmq, ctx, n, e, w);
      await admin.purgeQueue(QUEUE);
      ctx.log(`  RabbitMQ: hookrelay, ${n} messages`);
      const url = `amqp://${rmq.user}@127.0.0.1:${rmq.port}/?routingKey=${QUEUE}`;
      const run = await viaHookrelay(ctx, "amqp", url, rmq.password, n, e, w, "on", rabbitPids);
      await admin.purgeQueue(QUEUE);
      ctx.log(`  RabbitMQ: hookrelay, adaptive in-flight limit off, ${n} messages`);
      const fixed = await viaHookrelay(ctx, "amqp", url, rmq.password, n, e, w, "off", rabbitPids);
      await admin.purgeQueue(QUEUE);
      out.amqp = { ...shape, ...figures(bare, run, fixed) };
    } finally {
      await rmq.stop();
    }
  } else ctx.log(`  RabbitMQ: ${quick ? "left out of --quick" : "rabbitmq-server not installed"}`);
  return out;
}
