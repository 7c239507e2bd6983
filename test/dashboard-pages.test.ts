/**
 * The dashboard's pages and actions through app.inject (docs/dashboard.md, "Pages"): what
 * each page shows after real deliveries, scoping by the key signed in with, escaping of
 * hostile strings, and each action carried out by the API route behind it. The browser
 * tests (dashboard-browser*.test.ts) check the same in Chromium.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { apiCalls, unique, V1 } from "./helpers/api-calls.ts";
import { type DashboardClient, dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;
let admin: DashboardClient;
const { createApp, createEndpoint, sendMessage } = apiCalls(() => ({ h, rx }));

const XSS = `<script>alert(1)</script>"><img src=x onerror=alert(2)>`;

let appA: { id: string };
let appB: { id: string };
let epA: { id: string; url: string };
let epFailing: { id: string };
let epB: { id: string };

beforeAll(async () => {
  rx = await startReceiver((req) => ({ status: req.path.startsWith("/fail") ? 500 : 200 }));
  h = await startHarness({ delivery: { maxAttempts: 2 } as never });
  appA = await createApp({ name: `A ${XSS}` });
  appB = await createApp({ name: "B" });
  epA = await createEndpoint(appA.id, { description: `desc ${XSS}` });
  epFailing = await createEndpoint(appA.id, { url: `${rx.url}/fail/${unique("x")}` });
  epB = await createEndpoint(appB.id);
  h.startWorker();
  for (let i = 0; i < 3; i++) {
    await sendMessage(appA.id, {
      eventType: "order.paid",
      eventId: `evt-a-${i}`,
      payload: { i, note: XSS, email: "someone@example.com" },
    });
  }
  await sendMessage(appB.id, { eventType: "order.paid", eventId: "evt-b", payload: {} });
  await waitFor(async () => {
    const { rows } = await h.db.pool.query(
      "select count(*) filter (where status in ('delivered', 'dead_letter'))::int as n, count(*)::int as total from deliveries",
    );
    return rows[0].n === rows[0].total;
  });
  admin = dashboardClient(h.api);
  await admin.signIn(h.adminKey);
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

describe("pages", () => {
  test("overview: summary, alerts, chart panels and endpoint lists", async () => {
    const res = await admin.get("/dashboard");
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("Oldest pending");
    expect(res.body).toMatch(/Dead letters<\/div><div class="value">3</);
    expect(res.body).toContain('data-chart="outcomes"');
    expect(res.body).toContain("Most failing endpoints");
    const data = await admin.get("/dashboard/chart-data?hours=1&bucket_minutes=1");
    expect(data.statusCode).toBe(200);
    const buckets = data.json().data as { attempts: number }[];
    expect(buckets.reduce((n, b) => n + b.attempts, 0)).toBe(3 + 3 * 2 + 1);
  });

  test("endpoints: every endpoint for admin, only its app's for an app key", async () => {
    const all = await admin.get("/dashboard/endpoints");
    for (const ep of [epA, epFailing, epB])
      expect(all.body).toContain(`/dashboard/endpoints/${ep.id}`);
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: appB.id });
    const b = dashboardClient(h.api);
    await b.signIn(key);
    const mine = await b.get("/dashboard/endpoints");
    expect(mine.body).toContain(`/dashboard/endpoints/${epB.id}`);
    expect(mine.body).not.toContain(epA.id);
    expect((await b.get(`/dashboard/endpoints/${epA.id}`)).statusCode).toBe(404);
    expect((await b.get(`/dashboard/endpoints?app=${appA.id}`)).statusCode).toBe(404);
    expect((await b.get("/dashboard/messages?q=evt-a-1")).body).toContain("No message has");
    const chart = await b.get(`/dashboard/chart-data?endpoint_id=${epA.id}`);
    expect(chart.statusCode).toBe(404);
  });

  test("endpoints: filter, sort and page are in the URL", async () => {
    const open = await admin.get("/dashboard/endpoints?state=disabled");
    expect(open.body).toContain("0–0 of 0 endpoints");
    const byApp = await admin.get(`/dashboard/endpoints?app=${appB.id}`);
    expect(byApp.body).toContain("1–1 of 1 endpoints");
    const sorted = await admin.get("/dashboard/endpoints?sort=p95&dir=desc");
    expect(sorted.body).toMatch(/aria-sort="descending"><a href="[^"]*sort=p95"/);
    // junk in the query is ignored or refused, never a 500
    for (const q of ["sort=x&dir=y&page=-1", "state=a&state=b", "page=99999999999", "app[]=x"]) {
      expect((await admin.get(`/dashboard/endpoints?${q}`)).statusCode).toBeLessThan(500);
    }
  });

  test("dead letters: the analysis a page of endpoints at a time, the list below", async () => {
    const res = await admin.get("/dashboard/dead-letters");
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(
      '<p class="muted" data-testid="analysis-range">1 endpoint with dead letters (deaths in the last 24 hours), most dead first.</p>',
    );
    expect(res.body).toContain(`/dashboard/endpoints/${epFailing.id}/requeue`);
    expect(res.body).not.toContain('rel="next">Fewer dead');
    const past = await admin.get("/dashboard/dead-letters?ranked=50");
    expect(past.body).toContain("No more endpoints.");
    expect(past.body).toContain('href="/dashboard/dead-letters" rel="prev">← More dead</a>');
    const bad = await admin.get("/dashboard/dead-letters?ranked=x");
    expect(bad.body).toContain("1 endpoint with dead letters");
  });

  test("endpoint detail: circuit history, recent attempts, both charts and the dead-letter pattern", async () => {
    await h.db.pool.query(
      "insert into circuit_events (endpoint_id, from_state, to_state, reason) values ($1, 'closed', 'open', 'test: 5 failures')",
      [epFailing.id],
    );
    const res = await admin.get(`/dashboard/endpoints/${epFailing.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.body).toMatch(
      /data-testid="circuit-history"><li><time datetime="[^"]+">[^<]+<\/time>: <span class="badge closed">closed<\/span> → <span class="badge open">open<\/span> <span class="muted">test: 5 failures<\/span>/,
    );
    const attempts = /<table data-testid="attempts">[\s\S]*?<\/table>/.exec(res.body)![0];
    expect(attempts.match(/<tr>/g)).toHaveLength(1 + 3 * 2); // header + 3 messages x 2 attempts
    expect(attempts).toContain('<span class="badge critical">500</span>');
    expect(res.body).toContain(
      `data-chart="latency" data-src="/dashboard/chart-data?hours=24&amp;bucket_minutes=5&amp;endpoint_id=${epFailing.id}"`,
    );
    expect(res.body).toContain('data-chart="status"');
    expect(res.body).toMatch(/3 dead in the last 24 hours, pattern <strong>[a-z ]+<\/strong>: /);
    // the app by its name (as the endpoint list shows it), linking to its endpoints
    const appRow = /data-testid="app">([\s\S]*?)<\/dd>/.exec(res.body)![1];
    expect(appRow).toMatch(
      new RegExp(`^<a href="/dashboard/endpoints\\?app=${appA.id}">A &lt;script&gt;alert\\(1\\)`),
    );
  });

  test("dead letters: the analyses cover the latency window's deaths and say so; the list every one", async () => {
    // one of the endpoint's three dead letters died two days ago
    const { rows } = await h.db.pool.query(
      `update deliveries set updated_at = now() - interval '2 days'
       where id = (select id from deliveries where endpoint_id = $1 and dead_lettered
                   order by id limit 1)
       returning id, updated_at`,
      [epFailing.id],
    );
    expect(rows).toHaveLength(1);
    try {
      const detail = (await admin.get(`/dashboard/endpoints/${epFailing.id}`)).body;
      expect(detail).toMatch(/data-testid="dead-analysis">2 dead in the last 24 hours, pattern /);
      expect(detail).toContain("3 dead letters in all");
      const page = (await admin.get("/dashboard/dead-letters")).body;
      const analysis = /<table data-testid="analysis">[\s\S]*?<\/table>/.exec(page)![0];
      expect(analysis).toMatch(/<td class="num">2<\/td>/);
      const list = /<table data-testid="dead-letters">[\s\S]*?<\/table>/.exec(page)![0];
      expect(list.match(/<tr>/g)).toHaveLength(1 + 3);
      // a start of its own widens it
      const since = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
      const wide = (await admin.get(`/dashboard/dead-letters?since=${since}`)).body;
      expect(wide).toContain(`(deaths since ${since}T00:00:00Z)`);
      expect(/<table data-testid="analysis">[\s\S]*?<\/table>/.exec(wide)![0]).toMatch(
        /<td class="num">3<\/td>/,
      );
    } finally {
      await h.db.pool.query("update deliveries set updated_at = now() where id = $1", [rows[0].id]);
    }
  });

  test("dead letters: the list takes its filters from the URL", async () => {
    const rows = (body: string) =>
      (/<table data-testid="dead-letters">[\s\S]*?<\/table>/.exec(body)![0].match(/<tr>/g) ?? [])
        .length - 1;
    expect(rows((await admin.get("/dashboard/dead-letters")).body)).toBe(3);
    expect(rows((await admin.get("/dashboard/dead-letters?status_code=500")).body)).toBe(3);
    expect(rows((await admin.get("/dashboard/dead-letters?status_code=502")).body)).toBe(0);
    expect(rows((await admin.get(`/dashboard/dead-letters?endpoint_id=${epA.id}`)).body)).toBe(0);
    const kind = (await admin.get("/dashboard/dead-letters?error_kind=http_status")).body;
    expect(kind).toContain('value="http_status"');
    const since = await admin.get("/dashboard/dead-letters?since=2999-01-01");
    expect(rows(since.body)).toBe(0);
    expect(since.body).toContain("No dead letters match (deaths since 2999-01-01T00:00:00Z).");
    expect(since.body).toContain('value="2999-01-01"');
  });

  test("endpoints: the slow filter, and page 2 of more than 50", async () => {
    const many = await createApp({ name: "Many" });
    for (let i = 0; i < 55; i++) await createEndpoint(many.id);
    const first = await admin.get(`/dashboard/endpoints?app=${many.id}`);
    expect(first.body).toContain("1–50 of 55 endpoints");
    const second = await admin.get(`/dashboard/endpoints?app=${many.id}&page=2`);
    expect(second.body).toContain("51–55 of 55 endpoints");
    const ids = (body: string) => new Set(body.match(/\/dashboard\/endpoints\/ep_\w+/g));
    for (const id of ids(second.body)) expect(ids(first.body).has(id)).toBe(false);
    await h.db.pool.query(
      "update endpoint_health set slow = true where endpoint_id in (select id from endpoints where app_id = $1 order by id limit 2)",
      [many.id],
    );
    expect((await admin.get(`/dashboard/endpoints?app=${many.id}&slow=1`)).body).toContain(
      "1–2 of 2 endpoints",
    );
  });

  test("overview and lookup with an app key: its app's figures only; lookup by message id", async () => {
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: appB.id });
    const b = dashboardClient(h.api);
    await b.signIn(key);
    const overview = await b.get("/dashboard");
    expect(overview.statusCode).toBe(200);
    expect(overview.body).toMatch(/Dead letters<\/div><div class="value">0</);
    expect(overview.body).not.toContain(epFailing.id);
    const msg = (await h.call("GET", `${V1}/app/${appB.id}/msg`)).body.data[0].id as string;
    const found = await b.get(`/dashboard/messages?q=${msg}`);
    expect(found.statusCode).toBe(200);
    expect(found.body).toContain(msg);
    expect(found.body).toContain(epB.id);
    // another app's message is not found
    const other = (await h.call("GET", `${V1}/app/${appA.id}/msg`)).body.data[0].id as string;
    expect((await b.get(`/dashboard/messages?q=${other}`)).body).not.toContain(
      `data-testid="payload"`,
    );
  });

  test("hostile strings render as text", async () => {
    const pages = [
      await admin.get("/dashboard/endpoints"),
      await admin.get(`/dashboard/endpoints/${epA.id}`),
      await admin.get("/dashboard/messages?q=evt-a-1"),
    ];
    for (const res of pages) {
      expect(res.statusCode).toBe(200);
      expect(res.body).not.toContain("<script>alert");
      expect(res.body).not.toContain("<img src=x");
      expect(res.body).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    }
  });

  test("message lookup by eventId: masked payload and the attempts of every delivery", async () => {
    const res = await admin.get("/dashboard/messages?q=evt-a-2");
    expect(res.body).toContain('data-testid="payload"');
    expect(res.body).not.toContain("someone@example.com");
    expect(res.body).toContain("***");
    // two endpoints: one delivered at once, one dead after 2 attempts
    expect(res.body.match(/data-testid="delivery"/g)).toHaveLength(2);
    expect(res.body.match(/<li class="success">/g)).toHaveLength(1);
    expect(res.body.match(/<li class="failure">/g)).toHaveLength(2);
  });
  test("a message page refreshes its deliveries while one waits for a retry, and stops once all are final", async () => {
    // every delivery of appA's messages is final: no refresh
    const final = await admin.get("/dashboard/messages?q=evt-a-0");
    expect(final.body).toMatch(/<div id="deliveries">/);
    // a delivery that failed once and waits for its retry: every 15 s
    const waiting = await createEndpoint(appB.id, {
      url: `${rx.url}/fail/${unique("wait")}`,
      maxAttempts: 5,
      retryBaseMs: 60_000,
      retryCapMs: 60_000,
      eventTypes: ["order.waiting"],
    });
    const sent = await sendMessage(appB.id, { eventType: "order.waiting", payload: {} });
    // appB's other endpoint gets the message too: wait until that delivery is final as well,
    // and the waiting one's retry is pinned an hour ahead (the backoff's full jitter may
    // pick a wait of a few ms), so that only a retry is left to wait for when the page loads
    await waitFor(async () => {
      const { rows } = await h.db.pool.query<{ endpoint_id: string; status: string }>(
        "select endpoint_id, status from deliveries where message_id = $1",
        [sent.id],
      );
      if (
        !rows.every(
          (r) => r.endpoint_id === waiting.id || ["delivered", "dead_letter"].includes(r.status),
        )
      )
        return false;
      const pinned = await h.db.pool.query(
        `update deliveries set next_attempt_at = now() + interval '1 hour'
         where message_id = $1 and endpoint_id = $2 and status = 'failed'`,
        [sent.id, waiting.id],
      );
      return pinned.rowCount === 1;
    });
    const res = await admin.get(`/dashboard/messages/${sent.id}`);
    const div = res.body.match(/<div id="deliveries"[^>]*>/)?.[0] ?? "";
    expect(div).toContain(`hx-get="/dashboard/messages/${sent.id}"`);
    expect(div).toContain('hx-select="#deliveries"');
    expect(div).toContain('data-refresh="15"');
  });
});

describe("actions", () => {
  test("disable and enable go through PATCH endpoint", async () => {
    await admin.get(`/dashboard/endpoints/${epB.id}`);
    const res = await admin.post(`/dashboard/endpoints/${epB.id}/disable`);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(`/dashboard/endpoints/${epB.id}?done=disabled`);
    const url = `${V1}/app/${appB.id}/endpoint/${epB.id}`;
    expect((await h.call("GET", url)).body.disabled).toBe(true);
    expect((await admin.get(res.headers.location as string)).body).toContain("Endpoint disabled");
    await admin.post(`/dashboard/endpoints/${epB.id}/enable`);
    expect((await h.call("GET", url)).body.disabled).toBe(false);
  });

  test("rotate secret and reset circuit", async () => {
    const secretUrl = `${V1}/app/${appB.id}/endpoint/${epB.id}/secret`;
    const before = (await h.call("GET", secretUrl)).body.key;
    await admin.get(`/dashboard/endpoints/${epB.id}`);
    await admin.post(`/dashboard/endpoints/${epB.id}/rotate-secret`);
    expect((await h.call("GET", secretUrl)).body.key).not.toBe(before);
    await h.db.pool.query(
      "update endpoint_health set circuit_state = 'open', opened_at = now() where endpoint_id = $1",
      [epB.id],
    );
    expect((await admin.get(`/dashboard/endpoints/${epB.id}`)).body).toMatch(
      /data-testid="circuit"><span class="badge open">open/,
    );
    await admin.post(`/dashboard/endpoints/${epB.id}/reset-circuit`);
    const health = await h.call("GET", `${V1}/app/${appB.id}/endpoint/${epB.id}/health`);
    expect(health.body.circuit.state).toBe("closed");
  });

  test("requeue states the rows and the pace, then requeues them", async () => {
    await h.call("PATCH", `${V1}/app/${appA.id}/endpoint/${epFailing.id}`, { rateLimit: 2 });
    const confirm = await admin.get(`/dashboard/endpoints/${epFailing.id}/requeue`);
    expect(confirm.body).toMatch(/This requeues <strong>3<\/strong> dead letters/);
    expect(confirm.body).toContain("2 per second (the endpoint&#39;s rate limit)");
    const res = await admin.post(`/dashboard/endpoints/${epFailing.id}/requeue`);
    expect(res.headers.location).toBe(`/dashboard/endpoints/${epFailing.id}?done=requeued&n=3`);
  });

  test("resend a message to one endpoint", async () => {
    const page = await admin.get("/dashboard/messages?q=evt-a-0");
    const msgId = /\/dashboard\/messages\/(msg_\w+)\/resend/.exec(page.body)![1]!;
    const before = rx.requests.length;
    const res = await admin.post(`/dashboard/messages/${msgId}/resend`, { endpoint_id: epA.id });
    expect(res.statusCode).toBe(303);
    await waitFor(() => rx.requests.length > before);
  });

  test("edit: the postback settings through the form; a refusal shows the form again at 422", async () => {
    const ep = await createEndpoint(appB.id, { description: "plain" });
    const page = await admin.get(`/dashboard/endpoints/${ep.id}`);
    expect(page.body).toContain(`href="/dashboard/endpoints/${ep.id}/edit"`);
    expect(page.body).toMatch(/data-testid="delivery">POST, JSON body</);
    expect(page.body).toMatch(/data-testid="success-rule">any 2xx</);
    const form = await admin.get(`/dashboard/endpoints/${ep.id}/edit`);
    expect(form.statusCode).toBe(200);
    expect(form.body).toContain(`value="${ep.url}"`);
    expect(form.body).toContain('<details class="settings">');

    const fields = {
      url: `${rx.url}/pb?cid={click_id}&k={$token}`,
      description: "postback",
      method: "GET",
      bodyFormat: "json",
      missingFields: "empty",
      urlToken: "tr4cker-key",
      bodyContains: "OK",
      bodyNotContains: "",
      onFailure: "retry",
      signatureScheme: "v1+v1a",
    };
    const saved = await admin.post(`/dashboard/endpoints/${ep.id}/edit`, fields);
    expect(saved.statusCode, saved.body).toBe(303);
    expect(saved.headers.location).toBe(`/dashboard/endpoints/${ep.id}?done=saved`);
    const url = `${V1}/app/${appB.id}/endpoint/${ep.id}`;
    expect((await h.call("GET", url)).body).toMatchObject({
      url: fields.url,
      method: "GET",
      missingFields: "empty",
      urlToken: "***",
      successRule: { bodyContains: ["OK"], ignoreCase: false, onFailure: "retry" },
      signatureScheme: "v1+v1a",
    });
    const shown = await admin.get(saved.headers.location as string);
    expect(shown.body).toContain("Changes saved.");
    expect(shown.body).toMatch(
      /data-testid="delivery">GET, no body; URL template, a missing field renders empty; URL token/,
    );
    expect(shown.body).toContain("a 2xx body must contain &quot;OK&quot;; otherwise retried");
    for (const text of [shown.body, (await admin.get(`/dashboard/endpoints/${ep.id}/edit`)).body])
      expect(text).not.toContain("tr4cker-key");

    const refused = await admin.post(`/dashboard/endpoints/${ep.id}/edit`, {
      ...fields,
      urlToken: "",
      bodyFormat: "form",
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain('role="alert"');
    expect(refused.body).toContain('value="postback"');
    expect((await h.call("GET", url)).body.bodyFormat).toBe("json");

    const { key } = await createApiKey(h.db.pool, { role: "app", appId: appA.id });
    const a = dashboardClient(h.api);
    await a.signIn(key);
    expect((await a.get(`/dashboard/endpoints/${ep.id}/edit`)).statusCode).toBe(404);
    await a.get("/dashboard");
    expect((await a.post(`/dashboard/endpoints/${ep.id}/edit`, fields)).statusCode).toBe(404);
    expect((await h.call("GET", url)).body.description).toBe("postback");
  });

  test("an action of another app's endpoint is 404 and changes nothing", async () => {
    const { key } = await createApiKey(h.db.pool, { role: "app", appId: appB.id });
    const b = dashboardClient(h.api);
    await b.signIn(key);
    await b.get("/dashboard");
    const res = await b.post(`/dashboard/endpoints/${epA.id}/disable`);
    expect(res.statusCode).toBe(404);
    expect((await h.call("GET", `${V1}/app/${appA.id}/endpoint/${epA.id}`)).body.disabled).toBe(
      false,
    );
  });
});
