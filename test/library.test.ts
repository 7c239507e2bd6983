import { afterAll, beforeAll, expect, test } from "vitest";
import { ERROR_CODES, HookRelay } from "../src/index.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let receiver: Receiver;
let relay: HookRelay;
let appId: string;

beforeAll(async () => {
  h = await startHarness();
  receiver = await startReceiver();
  relay = new HookRelay({ pool: h.db.pool });
  appId = (await h.call("POST", "/api/v1/app", { name: "lib", uid: "lib" })).body.id;
  await h.call("POST", `/api/v1/app/${appId}/endpoint`, { url: `${receiver.url}/lib` });
  h.startWorker();
});
afterAll(async () => {
  await relay.close();
  await h.close();
  await receiver.close();
});

test("send() inside the caller's transaction commits or rolls back with it", async () => {
  const client = await h.db.pool.connect();
  try {
    await client.query("begin");
    await relay.send("lib", { eventType: "order.paid", payload: { order: 1 } }, { client });
    await client.query("rollback");
    await client.query("begin");
    const sent = await relay.send(
      "lib",
      { eventType: "order.paid", payload: '{"order":2, "b":1}' },
      { client },
    );
    await client.query("commit");
    await waitFor(() => receiver.requests.length >= 1, 10_000, "delivery");
    // The rolled-back message never reached the tables, so nothing can send it: the
    // committed one is the app's only message and delivery, and the only request.
    const { rows } = await h.db.pool.query(
      `select (select count(*)::int from messages where app_id = $1) as messages,
              (select count(*)::int from deliveries where app_id = $1) as deliveries`,
      [appId],
    );
    expect(rows[0]).toEqual({ messages: 1, deliveries: 1 });
    expect(receiver.requests.map((r) => r.body)).toEqual(['{"order":2, "b":1}']);
    expect(receiver.requests[0]!.headers["webhook-id"]).toBe(sent.messageId);
  } finally {
    client.release();
  }
});

test("send() rejects bad input with a clear error and a stable code from the registry", async () => {
  const refused = (code: string, message: RegExp) =>
    expect.objectContaining({
      name: "HookRelayError",
      code,
      message: expect.stringMatching(message),
    });
  await expect(relay.send("nope", { eventType: "a", payload: {} })).rejects.toEqual(
    refused("not_found", /not found/),
  );
  await expect(relay.send("lib", { eventType: "a b", payload: {} })).rejects.toEqual(
    refused("invalid_event_type", /eventType/),
  );
  await expect(relay.send("lib", { eventType: "a", payload: "{oops" })).rejects.toEqual(
    refused("invalid_payload", /valid JSON/),
  );
  await expect(relay.send("lib", { eventType: "a", payload: [1] })).rejects.toEqual(
    refused("invalid_payload", /object/),
  );
  for (const code of ["not_found", "invalid_event_type", "invalid_payload"]) {
    expect(Object.keys(ERROR_CODES)).toContain(code);
  }
});
