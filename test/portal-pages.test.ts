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
    // the header names the customer's app, not its id
    expect(list.body).toContain('<span class="who">Shop</span>');
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

describe("what a customer reads", () => {
  test("the event-type catalogue with description, schema and example; an endpoint's health cards and chart", async () => {
    const c = await openPortal(h.api, await link());
    const types = await c.get("/portal/event-types");
    expect(types.statusCode).toBe(200);
    expect(types.body).toContain("<h2><code>order.paid</code></h2>");
    expect(types.body).toContain("<p>An order was paid</p>");
    expect(types.body).toMatch(/<summary>Schema<\/summary><pre>\{\n {2}&quot;1&quot;: \{/);
    expect(types.body).toContain(
      "<h3>Example</h3><pre>{\n  &quot;order&quot;: 7,\n  &quot;total&quot;: &quot;9.90&quot;\n}</pre>",
    );

    const ep = (await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/health` }))
      .body.id;
    // 40 attempts in the window, 3 failed, all at 345 ms; the circuit open
    await h.db.pool.query(
      "insert into latency_samples (endpoint_id, at, latency_ms, ok) select $1, now() - g * interval '1 second', 345, g > 3 from generate_series(1, 40) g",
      [ep],
    );
    await h.db.pool.query(
      "update endpoint_health set circuit_state = 'open', opened_at = now() where endpoint_id = $1",
      [ep],
    );
    const page = await c.get(`/portal/endpoints/${ep}`);
    const card = (label: string) =>
      new RegExp(
        `<div class="label">${label}</div><div class="value">([^<]*(?:<span[^>]*><span[^>]*>[^<]*</span></span>)?)</div>`,
      ).exec(page.body)?.[1];
    expect(card("Success rate")).toBe("92.5 %");
    expect(card("p95")).toBe("345 ms");
    expect(card("Circuit")).toBe(
      '<span data-circuit="open"><span class="badge open">open</span></span>',
    );
    expect(page.body).toContain(
      `data-chart="latency" data-src="/portal/endpoints/${ep}/chart-data?hours=24&amp;bucket_minutes=5"`,
    );
    const chart = await c.get(`/portal/endpoints/${ep}/chart-data`);
    expect(chart.statusCode).toBe(200);
    expect(chart.json()).toMatchObject({ endpointId: ep, data: expect.any(Array) });
    const list = await c.get("/portal/endpoints");
    const row = list.body.slice(list.body.indexOf(`/portal/endpoints/${ep}"`)).split("</tr>")[0]!;
    expect(row).toContain('<span class="badge open">open</span>');
  });
});

describe("a postback endpoint through the form", () => {
  test("GET template, URL token, success rule and Ed25519: saved, shown without the token, kept on edit, delivered", async () => {
    const shop = (await h.call("POST", `${V1}/app`, { name: "Tracker <shop>" })).body.id;
    const res = await h.call("POST", `${V1}/auth/app-portal-access/${shop}`, {});
    const c = await openPortal(h.api, res.body.token);
    const form = await c.get("/portal/endpoints/new");
    for (const name of [
      "method",
      "bodyFormat",
      "missingFields",
      "urlToken",
      "bodyNotContains",
      "signatureScheme",
    ])
      expect(form.body).toContain(`name="${name}"`);
    expect(form.body).toContain('<details class="settings">');
    expect(form.body).toContain('<span class="who">Tracker &lt;shop&gt;</span>');

    const template = `${rx.url}/pb/{$token}?cid={click_id}&payout={payout}`;
    const fields = {
      url: template,
      description: "tracker",
      method: "GET",
      bodyFormat: "json",
      missingFields: "fail",
      urlToken: "s3cret-key",
      bodyContains: "",
      bodyNotContains: "DUPLICATE\r\n\r\n success=false ",
      ignoreCase: "on",
      onFailure: "permanent",
      signatureScheme: "v1a",
    };
    const made = await c.post("/portal/endpoints", fields);
    expect(made.statusCode, made.body).toBe(303);
    const path = made.headers.location!.split("?")[0]!;
    const epId = path.split("/").pop()!;
    const api = () => h.call("GET", `${V1}/app/${shop}/endpoint/${epId}`);
    expect((await api()).body).toMatchObject({
      url: template,
      method: "GET",
      urlToken: "***",
      missingFields: "fail",
      successRule: {
        bodyNotContains: ["DUPLICATE", "success=false"],
        ignoreCase: true,
        onFailure: "permanent",
      },
      signatureScheme: "v1a",
    });

    const page = await c.get(path);
    expect(page.body).not.toContain("s3cret-key");
    expect(page.body).toMatch(
      /data-testid="delivery">GET, no body; URL template, a missing field fails the delivery; URL token/,
    );
    expect(page.body).toContain(
      "must not contain &quot;DUPLICATE&quot; or &quot;success=false&quot; (ignoring case); otherwise a dead letter",
    );
    expect(page.body).toContain("Ed25519 (v1a");
    expect(page.body).toContain("<code>whpk_••••••••</code>");
    const keys = await c.post(`${path}/secret`);
    const publicKey = (await h.call("GET", `${V1}/app/${shop}/endpoint/${epId}/secret`)).body
      .publicKey;
    expect(publicKey).toMatch(/^whpk_/);
    expect(keys.body).toContain(`<pre data-public-key>${publicKey}</pre>`);
    expect(keys.body).not.toContain("data-secret");

    // the edit form: everything as saved, the token only said to be set, the settings open
    const edit = await c.get(`${path}/edit`);
    expect(edit.statusCode).toBe(200);
    expect(edit.body).not.toContain("s3cret-key");
    expect(edit.body).toContain('<details class="settings" open>');
    expect(edit.body).toContain('<option value="GET" selected>');
    expect(edit.body).toContain('<option value="v1a" selected>');
    expect(edit.body).toContain('<option value="permanent" selected>');
    expect(edit.body).toContain("DUPLICATE\nsuccess=false</textarea>");
    expect(edit.body).toContain('name="removeUrlToken"');

    // saved again with the token field empty: the token stays
    const kept = await c.post(path, {
      ...fields,
      urlToken: "",
      hadUrlToken: "1",
      description: "edited",
    });
    expect(kept.statusCode, kept.body).toBe(303);
    expect((await api()).body).toMatchObject({ description: "edited", urlToken: "***" });

    // delivered as the form said: a GET to the rendered URL, with the token, signed with Ed25519
    const worker = h.startWorker();
    await h.call("POST", `${V1}/app/${shop}/msg`, {
      eventType: "order.paid",
      payload: { click_id: "c/1 2", payout: 99.5 },
    });
    const at = "/pb/s3cret-key?cid=c%2F1%202&payout=99.5";
    await waitFor(() => rx.on(at).length === 1, 10_000, "the postback");
    const got = rx.on(at)[0]!;
    expect(got.method).toBe("GET");
    expect(got.body).toBe("");
    expect(String(got.headers["webhook-signature"])).toMatch(/^v1a,/);
    await worker.stop();

    // a combination the API refuses comes back as the form with the API's words, at 422
    const refused = await c.post(path, { ...fields, urlToken: "", bodyFormat: "form" });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('role="alert"');
    expect(refused.body).toMatch(/GET.*form|form.*GET/);
    expect(refused.body).toContain('<option value="form" selected>');
    expect(refused.body).not.toContain("s3cret-key");

    // removing the token while the URL still places it is refused; with a plain URL it clears it
    const stillPlaced = await c.post(path, { ...fields, urlToken: "", removeUrlToken: "on" });
    expect(stillPlaced.statusCode).toBe(422);
    expect(stillPlaced.body).toContain("no urlToken");
    const cleared = await c.post(path, {
      ...fields,
      url: `${rx.url}/pb?cid={click_id}`,
      urlToken: "",
      removeUrlToken: "on",
      bodyNotContains: "",
      signatureScheme: "v1",
    });
    expect(cleared.statusCode, cleared.body).toBe(303);
    const after = (await api()).body;
    expect(after).toMatchObject({ urlToken: null, successRule: null, method: "GET" });
    expect(after.signatureScheme).toMatch(/v1/);
  });
});

describe("headers: embedding, cookies, caching", () => {
  const exchange = (api: Harness["api"], token: string, headers: Record<string, string> = {}) =>
    api.inject({
      method: "POST",
      url: "/portal/session",
      headers: { "content-type": "application/json", ...headers },
      payload: JSON.stringify({ token }),
    });

  test("over http: an HttpOnly cookie for /portal, SameSite=Lax, expiring with the link; frame-ancestors 'self' by default", async () => {
    const token = await link({ expiry: 600 });
    const res = await exchange(h.api, token);
    expect(res.statusCode).toBe(204);
    const cookie = String(res.headers["set-cookie"]);
    expect(cookie).toMatch(
      /^hookrelay_portal=[A-Za-z0-9_-]{43}; Path=\/portal; HttpOnly; Max-Age=(59\d|600); SameSite=Lax$/,
    );
    const c = await openPortal(h.api, token);
    const page = await c.get("/portal/endpoints");
    const csp = String(page.headers["content-security-policy"]);
    expect(csp).toContain("frame-ancestors 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(page.headers["x-frame-options"]).toBeUndefined();
    expect(page.headers["cache-control"]).toBe("no-store");
    expect(page.headers["referrer-policy"]).toBe("same-origin");
    // no inline script anywhere: every script element has a src
    expect(page.body.match(/<script(?![^>]*\ssrc=)[^>]*>/g)).toBeNull();
  });

  test("behind https (HOOKRELAY_PUBLIC_URL): SameSite=None; Secure; Partitioned, and the configured frame ancestors", async () => {
    const other = await startHarness({
      publicUrl: "https://hooks.example.com",
      portalFrameAncestors: ["https://app.example.com", "https://*.example.org"],
    });
    try {
      const app = await other.call("POST", `${V1}/app`, { name: "x" });
      const made = await other.call("POST", `${V1}/auth/app-portal-access/${app.body.id}`, {});
      const res = await exchange(other.api, made.body.token);
      expect(String(res.headers["set-cookie"])).toMatch(
        /; HttpOnly; Max-Age=\d+; SameSite=None; Secure; Partitioned$/,
      );
      const landing = await other.api.inject({ method: "GET", url: "/portal/" });
      expect(landing.headers["content-security-policy"]).toContain(
        "frame-ancestors https://app.example.com https://*.example.org",
      );
    } finally {
      await other.close();
    }
  });

  test("the exchange takes JSON from this origin only, and refuses dead or junk tokens alike", async () => {
    const token = await link();
    const form = await h.api.inject({
      method: "POST",
      url: "/portal/session",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `token=${token}`,
    });
    expect(form.statusCode).toBe(403);
    expect(form.headers["set-cookie"]).toBeUndefined();
    const foreign = await exchange(h.api, token, { origin: "https://evil.example" });
    expect(foreign.statusCode).toBe(403);
    expect(foreign.headers["set-cookie"]).toBeUndefined();
    for (const junk of ["", "hrpt_short", `hrpt_${"A".repeat(43)}`, "x".repeat(128)]) {
      const res = await exchange(h.api, junk);
      expect(res.statusCode, junk).toBe(401);
      expect(res.headers["set-cookie"]).toBeUndefined();
    }
  });

  test("a hostile endpoint description and payload are text on every page that shows them", async () => {
    const hostile = `<script>alert(1)</script>"><img src=x onerror=alert(1)>`;
    const ep = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${rx.url}/hostile`,
      description: hostile,
    });
    const msg = await h.call("POST", `${V1}/app/${appId}/msg`, {
      eventType: "order.paid",
      payload: { note: hostile },
    });
    const c = await openPortal(h.api, await link());
    for (const path of [
      "/portal/endpoints",
      `/portal/endpoints/${ep.body.id}`,
      `/portal/endpoints/${ep.body.id}/edit`,
      `/portal/messages/${msg.body.id}`,
    ]) {
      const page = await c.get(path);
      expect(page.statusCode, path).toBe(200);
      expect(page.body, path).not.toContain("<script>alert");
      expect(page.body, path).not.toContain("<img src");
      expect(page.body, path).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    }
  });
});

describe("many endpoints", () => {
  test("the list pages by 100, and every page shows its endpoints' health", async () => {
    const many = (await h.call("POST", `${V1}/app`, { name: "Many" })).body.id;
    await h.db.pool.query(
      `insert into endpoints (id, app_id, url)
       select 'ep_' || lpad(i::text, 22, '0'), $1, 'https://example.com/' || i
       from generate_series(1, 330) i`,
      [many],
    );
    const res = await h.call("POST", `${V1}/auth/app-portal-access/${many}`, {});
    const c = await openPortal(h.api, res.body.token);
    let page = await c.get("/portal/endpoints");
    const rows = (body: string) => (body.match(/<tr>/g)?.length ?? 0) - 1;
    const badges = (body: string) => body.match(/class="badge closed"/g)?.length ?? 0;
    const seen: number[] = [];
    for (;;) {
      expect(badges(page.body), "each row has its circuit: the same page of health rows").toBe(
        rows(page.body),
      );
      seen.push(rows(page.body));
      const next = /href="(\/portal\/endpoints\?iterator=[^"]+)"/.exec(page.body)?.[1];
      if (!next) break;
      page = await c.get(next.replaceAll("&amp;", "&"));
    }
    expect(seen).toEqual([100, 100, 100, 30]);
    expect(page.body).toContain("https://example.com/330");
  });
});
