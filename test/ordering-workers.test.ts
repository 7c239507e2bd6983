/**
 * Ordered delivery under load (docs/delivery.md, "Ordering"), at the size issue 29 names:
 * 10,000 messages over 100 ordering keys to one endpoint whose receiver answers 503 to one
 * request in five at random, delivered by 3 worker processes (`node dist/cli/main.js
 * worker`), one of them SIGKILLed midway. Per key the requests arrive one message at a time
 * (a message's retries, and its resending after the kill, before the next message), and the
 * first 2xx of each message comes in send order. The messages are written in batches that
 * mix the keys, as the API's group commit writes them (src/queue/enqueue-batcher.ts). The
 * same check runs outside the suite as `npm run faults -- --scenario ordered`
 * (faults/ordered.ts), which also prints its timings.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { writeMessages } from "../src/queue/enqueue-message.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { killAll, startWorkers } from "./helpers/processes.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const KEYS = 100;
const PER_KEY = 100;
const BATCH = 50;

interface Seen {
  key: string;
  seq: number;
  status: number;
}

let h: Harness;
let rx: Receiver;
const seen: Seen[] = [];

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver((req) => {
    const { key, seq } = JSON.parse(req.body) as { key: string; seq: number };
    const status = Math.random() < 0.2 ? 503 : 200;
    seen.push({ key, seq, status });
    return { status };
  });
});
afterAll(async () => {
  await killAll();
  await h?.close();
  await rx?.close();
});

test("each key's requests come one message at a time and in send order, across 503 retries and a killed worker", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "ordered-load" });
  const ep = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
    url: `${rx.url}/ordered`,
    maxInFlight: KEYS,
    maxAttempts: 100,
    retryBaseMs: 0,
    retryCapMs: 20,
    failureThreshold: 10_000,
  });
  expect(ep.status, JSON.stringify(ep.body)).toBe(201);

  // message i goes to key i % KEYS: every batch holds messages of every key
  const messages = Array.from({ length: KEYS * PER_KEY }, (_, i) => {
    const key = `key-${i % KEYS}`;
    const seq = Math.floor(i / KEYS);
    return {
      appId: app.body.id as string,
      eventType: "ordered.event",
      payload: JSON.stringify({ key, seq }),
      orderingKey: key,
    };
  });
  const workers = await startWorkers(3, h.db.url, { HOOKRELAY_LOG_LEVEL: "error" });
  for (let i = 0; i < messages.length; i += BATCH) {
    const results = await writeMessages(h.db.pool, messages.slice(i, i + BATCH), 100);
    for (const r of results) expect(r).not.toBeInstanceOf(Error);
  }

  // SIGKILL one worker once a third of the messages are through
  const ok = () => seen.filter((s) => s.status === 200).length;
  await waitFor(() => ok() >= messages.length / 3, 60_000, "a third of the messages");
  process.kill(workers[0]!.pid, "SIGKILL");
  await workers[0]!.exited;

  const delivered = async () =>
    Number(
      (
        await h.db.pool.query(
          "select count(*) as n from deliveries where endpoint_id = $1 and status = 'delivered'",
          [ep.body.id],
        )
      ).rows[0].n,
    );
  await waitFor(async () => (await delivered()) === messages.length, 120_000, "every delivery");

  for (let k = 0; k < KEYS; k++) {
    const key = `key-${k}`;
    const requests = seen.filter((s) => s.key === key);
    // one message at a time: once message n+1 was sent, message n is never sent again
    const seqs = requests.map((s) => s.seq);
    expect(seqs, key).toEqual([...seqs].sort((a, b) => a - b));
    // the first 2xx of each message, in send order, every message
    const firsts: number[] = [];
    for (const s of requests)
      if (s.status === 200 && firsts[firsts.length - 1] !== s.seq) firsts.push(s.seq);
    expect(firsts, key).toEqual(Array.from({ length: PER_KEY }, (_, i) => i));
  }
  // the receiver's 503s made retries, which the order held across
  expect(seen.some((s) => s.status === 503)).toBe(true);
}, 240_000);
