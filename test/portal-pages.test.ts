/**
 * The tenant portal's pages and actions through app.inject() (docs/portal.md): a link opens
 * a session; a customer adds, edits, disables, enables and deletes endpoints, reveals and
 * rotates the secret, sends a test event that reaches only that endpoint, reads the
 * delivery log and resends; the SSRF guard refuses a private URL; the link's capabilities
 * limit the actions; CSRF and escaping hold.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
let h: Harness;
let rx: Receiver;
let appId: string;

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver();
  appId = (await h.call("POST", `${V1}/app`, { name: "Shop" })).body.id;
  await h.call("POST", `${V1}/event-type`, {
    name: "order.paid",
    description: "An order was paid",
    schemas: { "1": { type: "object", examples: [{ order: 7, total: "9.90" }] } },
  });
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

async function link(body: unknown = {}) {
  const res = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, body);
  expect(res.status).toBe(200);
  return res.body.token as string;
}

describe("a customer manages endpoints", () => {
  test("add, see it listed, edit, disable, enable, delete", async () => {
    const c = await openPortal(h.api, await link());
    const form = await c.get("/portal/endpoints/new");
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain('value="order.paid"');
    const made = await c.post("/portal/endpoints", {
      url: `${rx.url}/shop`,
      description: "main hook",
      eventTypes: "order.paid",
    });
    expect(made.statusCode, made.body).toBe(303);
    const path = made.headers.location!.split("?")[0]!;
    const epId = path.split("/").pop()!;
    const { rows } = await h.db.pool.query(
      "select app_id, event_types, description from endpoints where id = $1",
      [epId],
    );
    expect(rows[0]).toEqual({
      app_id: appId,
      event_types: ["order.paid"],
      description: "main hook",
    });
    const list = await c.get("/portal/endpoints");
    expect(list.body).toContain(`/portal/endpoints/${epId}`);
    const page = await c.get(path);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("main hook");

    const edited = await c.post(path, { url: `${rx.url}/shop2`, description: "renamed" });
    expect(edited.statusCode).toBe(303);
    const after = await h.call("GET", `${V1}/app/${appId}/endpoint/${epId}`);
    expect(after.body).toMatchObject({
      url: `${rx.url}/shop2`,
      description: "renamed",
      eventTypes: null,
    });

    expect((await c.post(`${path}/disable`)).statusCode).toBe(303);
    expect((await h.call("GET", `${V1}/app/${appId}/endpoint/${epId}`)).body.disabled).toBe(true);
    expect((await c.post(`${path}/enable`)).statusCode).toBe(303);
    expect((await h.call("GET", `${V1}/app/${appId}/endpoint/${epId}`)).body.disabled).toBe(false);
    expect((await c.post(`${path}/delete`)).statusCode).toBe(303);
    expect((await h.call("GET", `${V1}/app/${appId}/endpoint/${epId}`)).status).toBe(404);
  });

  test("a private URL is refused by the SSRF guard, the form shown again with the reason", async () => {
    const c = await openPortal(h.api, await link());
    const res = await c.post("/portal/endpoints", {
      url: "http://10.1.2.3/hook",
      description: "kept",
    });
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain("url is not allowed");
    expect(res.body).toContain('value="kept"');
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from endpoints where url like 'http://10.%'",
    );
    expect(rows[0].n).toBe(0);
  });

  test("reveal and rotate the secret; a test event reaches that endpoint only, and is in the log", async () => {
    const c = await openPortal(h.api, await link());
    const a = (await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/a` })).body.id;
    await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/b` });
    await c.get(`/portal/endpoints/${a}`);
    const shown = await c.post(`/portal/endpoints/${a}/secret`);
    const secret = (await h.call("GET", `${V1}/app/${appId}/endpoint/${a}/secret`)).body.key;
    expect(shown.body.replaceAll("&#61;", "=")).toContain(secret);
    expect(shown.headers["cache-control"]).toBe("no-store");
    expect((await c.post(`/portal/endpoints/${a}/secret/rotate`)).statusCode).toBe(303);
    const rotated = (await h.call("GET", `${V1}/app/${appId}/endpoint/${a}/secret`)).body.key;
    expect(rotated).not.toBe(secret);

    const worker = h.startWorker();
    const sent = await c.post(`/portal/endpoints/${a}/test`, { eventType: "order.paid" });
    expect(sent.statusCode, sent.body).toBe(303);
    const msgPath = sent.headers.location!;
    await waitFor(() => rx.on("/a").length === 1, 10_000, "the test event");
    expect(JSON.parse(rx.on("/a")[0]!.body)).toEqual({ order: 7, total: "9.90" });
    await waitFor(
      async () => (await c.get(msgPath)).body.includes("delivered"),
      10_000,
      "delivered",
    );
    const msgPage = await c.get(msgPath);
    expect(msgPage.body).toContain("order.paid");
    expect(msgPage.body).toContain("attempt 1");
    const resent = await c.post(`${msgPath}/endpoints/${a}/resend`);
    expect(resent.statusCode).toBe(303);
    await waitFor(() => rx.on("/a").length === 2, 10_000, "the resend");
    expect(rx.on("/b")).toEqual([]);
    await worker.stop();
  });
});
