import { afterAll, beforeAll, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

test("event types: create, read, list, patch, put, archive; schemas kept as sent", async () => {
  const schemas = '{"1":{"type":"object","properties":{"z":{},"a":{}}}}';
  const created = await h.call(
    "POST",
    "/api/v1/event-type",
    `{"name":"order.paid","description":"paid","schemas":${schemas}}`,
  );
  expect(created.status).toBe(201);
  expect(created.body).toMatchObject({
    name: "order.paid",
    description: "paid",
    archived: false,
    deprecated: false,
  });
  const raw = await h.api.inject({
    method: "GET",
    url: "/api/v1/event-type/order.paid",
    headers: { authorization: `Bearer ${h.adminKey}` },
  });
  expect(raw.body).toContain(`"schemas":${schemas}`);
  expect(
    (await h.call("POST", "/api/v1/event-type", { name: "order.paid", description: "again" }))
      .status,
  ).toBe(409);
  expect(
    (await h.call("POST", "/api/v1/event-type", { name: "bad name", description: "x" })).status,
  ).toBe(422);

  await h.call("POST", "/api/v1/event-type", { name: "order.refunded", description: "refunded" });
  const patched = await h.call("PATCH", "/api/v1/event-type/order.refunded", { deprecated: true });
  expect(patched.body).toMatchObject({ description: "refunded", deprecated: true });
  expect((await h.call("PATCH", "/api/v1/event-type/nope", { deprecated: true })).status).toBe(404);
  const put = await h.call("PUT", "/api/v1/event-type/user.created", {
    description: "new via put",
  });
  expect(put.status).toBe(201);
  expect(
    (await h.call("PUT", "/api/v1/event-type/user.created", { description: "replaced" })).body
      .description,
  ).toBe("replaced");

  expect((await h.call("DELETE", "/api/v1/event-type/order.refunded")).status).toBe(204);
  const list = await h.call("GET", "/api/v1/event-type");
  expect(list.body.data.map((e: { name: string }) => e.name)).toEqual([
    "order.paid",
    "user.created",
  ]);
  const all = await h.call("GET", "/api/v1/event-type?include_archived=true");
  expect(all.body.data).toHaveLength(3);
  expect((await h.call("DELETE", "/api/v1/event-type/order.refunded?expunge=true")).status).toBe(
    204,
  );
  expect((await h.call("GET", "/api/v1/event-type/order.refunded")).status).toBe(404);
});

test("app keys may read event types but not change them", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "et" });
  const { key } = await createApiKey(h.db.pool, { role: "app", appId: app.body.id });
  const as = { authorization: `Bearer ${key}` };
  expect((await h.call("GET", "/api/v1/event-type", undefined, as)).status).toBe(200);
  expect(
    (await h.call("POST", "/api/v1/event-type", { name: "x.y", description: "d" }, as)).status,
  ).toBe(403);
});
