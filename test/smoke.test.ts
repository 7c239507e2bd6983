import { afterAll, beforeAll, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let receiver: Receiver;
beforeAll(async () => {
  h = await startHarness();
  receiver = await startReceiver();
});
afterAll(async () => {
  await h.close();
  await receiver.close();
});

test("a message reaches its endpoint", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "a" });
  expect(app.status).toBe(201);
  const ep = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
    url: `${receiver.url}/x`,
  });
  expect(ep.status).toBe(201);
  const msg = await h.call("POST", `/api/v1/app/${app.body.id}/msg`, {
    eventType: "t",
    payload: { a: 1 },
  });
  expect(msg.status).toBe(202);
  h.startWorker();
  await waitFor(() => receiver.requests.length === 1);
  expect(receiver.requests[0]!.body).toBe('{"a":1}');
});
