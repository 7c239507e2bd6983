/**
 * The "Blocked keys" section of the dashboard's and the portal's endpoint pages
 * (docs/dashboard.md, docs/portal.md; docs/delivery.md, "Ordering") through app.inject,
 * with a worker in this process and a real receiver on 127.0.0.1: the table (key, head,
 * why, since when, how many wait; a FIFO endpoint's key as "(whole endpoint)") only while
 * the endpoint has a blocked key; Retry and Skip as CSRF-protected posts that release the
 * key, the rest of it then delivered in order; the portal's buttons only with the
 * CreateAttempts capability.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type DashboardClient, dashboardClient } from "./helpers/dashboard-client.ts";
import {
  deliveryCalls,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";

let h: Harness;
let rx: ScriptedReceiver;
let admin: DashboardClient;
const { newApp, newEndpoint, send, deliveryRow, waitForStatus } = deliveryCalls(() => h);

beforeAll(async () => {
  rx = await startScriptedReceiver();
  h = await startHarness();
  h.startWorker();
  admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const arrivals = (path: string): number[] => rx.on(path).map((r) => JSON.parse(r.body).n);

/**
 * An endpoint whose message 1 dies at once (until `heal`), and messages 1-3 sent under
 * key "k" (or a FIFO endpoint's one key): 1 is the dead head, 2 and 3 wait.
 */
async function blockedEndpoint(policy: Record<string, unknown> = {}) {
  let failing = true;
  const path = rx.route((req) => ({
    status: failing && JSON.parse(req.body).n === 1 ? 500 : 200,
  }));
  const appId = await newApp();
  const endpointId = await newEndpoint(appId, `${rx.url}${path}`, { maxAttempts: 1, ...policy });
  const msgs: string[] = [];
  for (const n of [1, 2, 3]) msgs.push(await send(appId, { n }, { orderingKey: "k" }));
  await waitForStatus(msgs[0]!, endpointId, "dead_letter");
  const head = await deliveryRow(msgs[0]!, endpointId);
  const listed = await h.call(
    "GET",
    `/api/v1/app/${appId}/endpoint/${endpointId}/ordering-keys/blocked`,
  );
  const deliveryId: string = listed.body.data[0].deliveryId;
  const heal = () => {
    failing = false;
  };
  return { appId, endpointId, path, msgs, head, deliveryId, heal };
}

async function expectRestDelivered(t: Awaited<ReturnType<typeof blockedEndpoint>>) {
  await waitForStatus(t.msgs[2]!, t.endpointId, "delivered");
  expect((await deliveryRow(t.msgs[1]!, t.endpointId))?.status).toBe("delivered");
}

describe("the dashboard's endpoint page", () => {
  test("shows the blocked key with its head, why, since when and how many wait; Skip releases it", async () => {
    const t = await blockedEndpoint();
    const page = await admin.get(`/dashboard/endpoints/${t.endpointId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('id="h-blocked"');
    const row = /<tr data-delivery="([^"]+)">([\s\S]*?)<\/tr>/.exec(page.body)!;
    expect(row[1]).toBe(t.deliveryId);
    expect(row[2]).toContain("<code>k</code>");
    expect(row[2]).toContain(t.msgs[0]);
    expect(row[2]).toContain("dead letter");
    expect(row[2]).toContain("500");
    expect(row[2]).toMatch(/<time datetime="[^"]+">/);
    expect(row[2]).toMatch(/<td class="num">2<\/td>/);
    const skip = `/dashboard/endpoints/${t.endpointId}/ordering-keys/${t.deliveryId}/skip`;
    expect(page.body).toContain(`action="${skip}"`);
    // without the CSRF token nothing happens
    expect((await admin.post(skip, { _csrf: "" })).statusCode).toBe(403);
    expect((await deliveryRow(t.msgs[0]!, t.endpointId))?.status).toBe("dead_letter");

    const done = await admin.post(skip);
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toBe(`/dashboard/endpoints/${t.endpointId}?done=key-skip`);
    await expectRestDelivered(t);
    expect((await deliveryRow(t.msgs[0]!, t.endpointId))?.status).toBe("canceled");
    expect(arrivals(t.path)).toEqual([1, 2, 3]);
    const after = await admin.get(done.headers.location!);
    expect(after.body).toContain("was skipped");
    expect(after.body).not.toContain('id="h-blocked"');
  });

  test("Retry sends the head again first, then the rest in order; a FIFO endpoint's key is the whole endpoint", async () => {
    const t = await blockedEndpoint({ ordering: "fifo" });
    const page = await admin.get(`/dashboard/endpoints/${t.endpointId}`);
    expect(page.body).toContain("(whole endpoint)");
    t.heal();
    const done = await admin.post(
      `/dashboard/endpoints/${t.endpointId}/ordering-keys/${t.deliveryId}/retry`,
    );
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toContain("done=key-retry");
    await expectRestDelivered(t);
    expect(arrivals(t.path)).toEqual([1, 1, 2, 3]);
  });

  test("an endpoint without a blocked key has no such section", async () => {
    const appId = await newApp();
    const endpointId = await newEndpoint(appId, `${rx.url}${rx.route(() => ({ status: 200 }))}`);
    const page = await admin.get(`/dashboard/endpoints/${endpointId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('id="h-blocked"');
  });
});

describe("the portal's endpoint page", () => {
  async function portalOf(appId: string, body: Record<string, unknown> = {}) {
    const res = await h.call("POST", `/api/v1/auth/app-portal-access/${appId}`, body);
    expect(res.status).toBe(200);
    return openPortal(h.api, res.body.token);
  }

  test("shows the blocked key and Skip releases it; a link without CreateAttempts sees it without buttons and is refused", async () => {
    const t = await blockedEndpoint();
    const viewer = await portalOf(t.appId, { capabilities: ["ViewBase"] });
    const seen = await viewer.get(`/portal/endpoints/${t.endpointId}`);
    expect(seen.statusCode).toBe(200);
    expect(seen.body).toContain('data-testid="blocked-keys"');
    expect(seen.body).toContain(t.msgs[0]);
    const skip = `/portal/endpoints/${t.endpointId}/ordering-keys/${t.deliveryId}/skip`;
    expect(seen.body).not.toContain(`action="${skip}"`);
    expect((await viewer.post(skip)).statusCode).toBe(403);
    expect((await deliveryRow(t.msgs[0]!, t.endpointId))?.status).toBe("dead_letter");

    const full = await portalOf(t.appId);
    const page = await full.get(`/portal/endpoints/${t.endpointId}`);
    expect(page.body).toContain(`action="${skip}"`);
    expect((await full.post(skip, { _csrf: "" })).statusCode).toBe(403);
    const done = await full.post(skip);
    expect(done.statusCode).toBe(303);
    expect(done.headers.location).toContain("done=key-skip");
    await expectRestDelivered(t);
    expect(arrivals(t.path)).toEqual([1, 2, 3]);
    expect((await full.get(done.headers.location!)).body).not.toContain(
      'data-testid="blocked-keys"',
    );
  });

  test("Retry sends the head again, then the rest in order", async () => {
    const t = await blockedEndpoint();
    const full = await portalOf(t.appId);
    await full.get(`/portal/endpoints/${t.endpointId}`);
    t.heal();
    const done = await full.post(
      `/portal/endpoints/${t.endpointId}/ordering-keys/${t.deliveryId}/retry`,
    );
    expect(done.statusCode).toBe(303);
    await expectRestDelivered(t);
    expect(arrivals(t.path)).toEqual([1, 1, 2, 3]);
  });
});
