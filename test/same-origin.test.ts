// Regression: two hanging endpoints on one origin starved a healthy
// endpoint on the same origin, and requests queued in undici outlived their deadline/lease.
import { afterAll, beforeAll, expect, test } from "vitest";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;
beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver((req) =>
    req.path.startsWith("/hang") ? { hang: true } : { status: 200 },
  );
  h.startWorker();
});
afterAll(async () => {
  await h.close();
  await rx.close();
});

test("hanging endpoints do not hold back a healthy endpoint on the same origin", async () => {
  const hangApp = (await h.call("POST", "/api/v1/app", { name: "hang" })).body.id;
  for (const p of ["/hang1", "/hang2"]) {
    const r = await h.call("POST", `/api/v1/app/${hangApp}/endpoint`, {
      url: `${rx.url}${p}`,
      timeoutMs: 3000,
      maxAttempts: 1,
      // 16 requests held at once per endpoint fill the origin's 32 sockets; an adaptive
      // limit starts at one and grows only on answers, which these never give
      adaptiveConcurrency: "off",
    });
    expect(r.status).toBe(201);
  }
  const okApp = (await h.call("POST", "/api/v1/app", { name: "ok" })).body.id;
  const ok = await h.call("POST", `/api/v1/app/${okApp}/endpoint`, {
    url: `${rx.url}/ok`,
    maxAttempts: 1,
    timeoutMs: 1000,
  });
  for (let i = 0; i < 20; i++)
    await enqueueMessage(h.db.pool, { appId: hangApp, eventType: "t", payload: "{}" }, 5);
  await waitFor(() => rx.requests.length >= 32, 5000); // all 32 sockets of the origin are hanging
  const t0 = Date.now();
  for (let i = 0; i < 5; i++)
    await enqueueMessage(h.db.pool, { appId: okApp, eventType: "t", payload: "{}" }, 5);
  await waitFor(
    async () =>
      (
        await h.db.pool.query(
          "select count(*)::int as n from deliveries where endpoint_id = $1 and status in ('dead_letter','delivered')",
          [ok.body.id],
        )
      ).rows[0].n === 5,
    10000,
  );
  const attempts = await h.db.pool.query(
    "select delivery_id, attempt_number, latency_ms, error_kind from attempts where endpoint_id = $1 order by id",
    [ok.body.id],
  );
  console.log(
    JSON.stringify(attempts.rows),
    rx.on("/ok").map((r) => r.at - t0),
  );
  // Expected: 5 attempts, all 200: none waited for a socket until its 1000 ms deadline
  // (that would be a timeout, error_kind 'timeout').
  expect(attempts.rows).toHaveLength(5);
  for (const a of attempts.rows) expect(a.error_kind).toBeNull();
});
