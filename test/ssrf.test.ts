/**
 * The SSRF guard is on by default: with an empty allow-list, loopback and private URLs are
 * refused when an endpoint is saved, and a row that slipped past (or a name that re-points
 * later) fails at connect time as a permanent ssrf_blocked attempt, never retried.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let receiver: Receiver;
beforeAll(async () => {
  h = await startHarness({ ssrfAllowlist: [] });
  receiver = await startReceiver();
});
afterAll(async () => {
  await h.close();
  await receiver.close();
});

test("loopback, private, link-local and metadata URLs are refused when saved", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "ssrf" });
  for (const url of [
    `${receiver.url}/x`,
    "http://10.0.0.1/",
    "http://169.254.169.254/latest/meta-data",
    "http://[::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://2130706433/",
    "http://localhost/",
  ]) {
    const res = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url });
    expect(res.status, url).toBe(422);
    expect(res.body.code).toBe("url_not_allowed");
  }
  const ep = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
    url: "https://93.184.215.14/hook",
  });
  expect(ep.status).toBe(201);
  const patched = await h.call("PATCH", `/api/v1/app/${app.body.id}/endpoint/${ep.body.id}`, {
    url: "http://192.168.1.1/",
  });
  expect(patched.status).toBe(422);
});

test("a blocked address is refused at connect time too: dead letter ssrf_blocked after one attempt", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "ssrf2" });
  const ep = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
    url: "https://93.184.215.14/hook",
  });
  // Point it at the loopback receiver behind the API's back (as DNS rebinding would).
  await h.db.pool.query("update endpoints set url = $1 where id = $2", [
    `${receiver.url}/rebound`,
    ep.body.id,
  ]);
  const msg = await h.call("POST", `/api/v1/app/${app.body.id}/msg`, {
    eventType: "t",
    payload: { a: 1 },
  });
  h.startWorker();
  await waitFor(async () => {
    const { rows } = await h.db.pool.query("select status from deliveries where message_id = $1", [
      msg.body.id,
    ]);
    return rows[0]?.status === "dead_letter";
  });
  const { rows } = await h.db.pool.query(
    "select attempt_count, last_error_kind from deliveries where message_id = $1",
    [msg.body.id],
  );
  expect(rows[0]).toEqual({ attempt_count: 1, last_error_kind: "ssrf_blocked" });
  expect(receiver.requests).toHaveLength(0);
});
