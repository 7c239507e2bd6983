/**
 * OAuth2 client credentials end to end (docs/oauth2.md): endpoints saved through the API
 * (the secret sealed, answered as ***, refused settings as 422s with stable codes), a worker
 * delivering to a real receiver on 127.0.0.1 with bearer tokens from a real token server on
 * 127.0.0.1: one token for many concurrent deliveries, a 401 that fetches a new token once
 * and retries inside the attempt, and a token endpoint that fails (garbage, no answer,
 * refused credentials): attempts of kind `oauth`, retried, the receiver never reached. The
 * secret appears in no API answer, no attempt row and no log line (debug level, captured).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { makeHttpSender } from "../src/delivery/http-sender.ts";
import { makeLogger } from "../src/logger.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { reencryptSecrets } from "../src/security/reencrypt.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { makeWorker, type Worker } from "../src/worker/worker.ts";
import {
  deliveryCalls,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

const KEY = randomBytes(32).toString("base64");
const SECRET = `cs-${randomBytes(12).toString("hex")}`;
let h: Harness;
let rx: ScriptedReceiver;
let worker: Worker;
const sender = makeHttpSender({ ssrfGuard: makeSsrfGuard({ allowlist: ["127.0.0.0/8"] }) });
const logLines: string[] = [];
const answers: string[] = [];
const calls = deliveryCalls(() => h);

beforeAll(async () => {
  rx = await startScriptedReceiver();
  h = await startHarness({ encryptionKey: KEY });
  worker = makeWorker({
    pool: h.db.pool,
    sender,
    config: { delivery: h.config.delivery, health: h.config.health, worker: h.config.worker },
    logger: makeLogger("debug", makeRedactor(), { write: (l: string) => void logLines.push(l) }),
    secretBox: makeSecretBox(KEY),
    redactor: makeRedactor(h.config.sensitiveFields),
    ssrfGuard: makeSsrfGuard({ allowlist: h.config.ssrfAllowlist }),
  });
  worker.start();
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await sender.close();
  await h?.close();
  await rx?.close();
});

/** An API call whose answer is kept for the leak check at the end. */
async function call(method: string, url: string, body?: unknown) {
  const res = await h.call(method, url, body);
  answers.push(JSON.stringify(res.body));
  return res;
}

/** A token path: tokens tok-<path>-<n> (rejected by the receiver when `refused` has them). */
function tokenServer(script?: (n: number) => { status?: number; body?: string; hang?: boolean }) {
  const path = rx.route((_req, n) =>
    script
      ? script(n)
      : {
          status: 200,
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            access_token: `tok${path}-${n}`,
            token_type: "Bearer",
            expires_in: 3600,
          }),
        },
  );
  return { url: `${rx.url}${path}`, requests: () => rx.on(path) };
}

const oauth2 = (tokenUrl: string, extra: Record<string, unknown> = {}) => ({
  tokenUrl,
  clientId: "relay-client",
  clientSecret: SECRET,
  scope: "webhooks",
  ...extra,
});

async function newOAuthEndpoint(
  appId: string,
  url: string,
  tokenUrl: string,
  more: Record<string, unknown> = {},
) {
  const res = await call("POST", `/api/v1/app/${appId}/endpoint`, {
    url,
    oauth2: oauth2(tokenUrl),
    ...more,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

describe("saving OAuth2 settings", () => {
  test("the secret is sealed at rest and answered as ***; *** keeps it, null removes it", async () => {
    const appId = await calls.newApp();
    const token = tokenServer();
    const id = await newOAuthEndpoint(appId, `${rx.url}/saved`, token.url);
    const path = `/api/v1/app/${appId}/endpoint/${id}`;
    const got = await call("GET", path);
    expect(got.body.oauth2).toEqual({
      tokenUrl: token.url,
      clientId: "relay-client",
      clientSecret: "***",
      scope: "webhooks",
      audience: null,
      authMethod: "client_secret_basic",
    });
    const stored = await h.db.pool.query(
      "select oauth2, oauth2_secret from endpoints where id=$1",
      [id],
    );
    expect(JSON.stringify(stored.rows[0])).not.toContain(SECRET);
    expect(makeSecretBox(KEY).open(stored.rows[0].oauth2_secret)).toBe(SECRET);

    const kept = await call("PATCH", path, {
      oauth2: { ...got.body.oauth2, authMethod: "client_secret_post" },
    });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expect(kept.body.oauth2).toMatchObject({
      clientSecret: "***",
      authMethod: "client_secret_post",
    });
    const after = await h.db.pool.query("select oauth2_secret from endpoints where id=$1", [id]);
    expect(makeSecretBox(KEY).open(after.rows[0].oauth2_secret)).toBe(SECRET);
    // a PUT that leaves oauth2 out keeps it
    const put = await call("PUT", path, { url: `${rx.url}/saved` });
    expect(put.body.oauth2?.clientSecret).toBe("***");
    const removed = await call("PATCH", path, { oauth2: null });
    expect(removed.body.oauth2).toBeNull();
    const list = await call("GET", `/api/v1/app/${appId}/endpoint`);
    expect(list.status).toBe(200);
  });

  test("the OpenAPI document describes oauth2 in the endpoint's body and answer", async () => {
    const res = await h.api.inject({ method: "GET", url: "/docs/json" });
    const doc = res.json();
    const post = doc.paths["/api/v1/app/{appId}/endpoint"].post;
    const body = JSON.stringify(post.requestBody);
    expect(body).toContain('"oauth2"');
    expect(body).toContain("client_secret_post");
    expect(JSON.stringify(post.responses["201"])).toContain('"clientSecret"');
  });

  test("bad settings are 422s with stable codes", async () => {
    const appId = await calls.newApp();
    const good = oauth2(tokenServer().url);
    const cases: [unknown, string][] = [
      [{ ...good, tokenUrl: "ftp://idp.example/token" }, "invalid_oauth"],
      [{ ...good, tokenUrl: "not a url" }, "invalid_oauth"],
      [{ ...good, tokenUrl: "https://user:pw@idp.example/token" }, "invalid_oauth"],
      [{ ...good, clientSecret: undefined }, "invalid_oauth"],
      [{ ...good, clientId: undefined }, "invalid_oauth"],
      [{ ...good, clientSecret: "***" }, "invalid_oauth"],
      [{ ...good, tokenUrl: "http://10.1.2.3/token" }, "url_not_allowed"],
      [{ ...good, tokenUrl: "http://169.254.169.254/token" }, "url_not_allowed"],
      [{ ...good, authMethod: "private_key_jwt" }, "validation_error"],
    ];
    for (const [o, code] of cases) {
      const res = await call("POST", `/api/v1/app/${appId}/endpoint`, {
        url: `${rx.url}/x`,
        oauth2: o,
      });
      expect([res.status, res.body.code], JSON.stringify(o)).toEqual([422, code]);
    }
    const broker = await call("POST", `/api/v1/app/${appId}/endpoint`, {
      url: "nats://127.0.0.1:4222?subject=orders&stream=ORDERS",
      oauth2: good,
    });
    expect([broker.status, broker.body.code]).toEqual([422, "invalid_oauth"]);
  });
});

describe("delivering with a bearer token", () => {
  test("one token serves many concurrent deliveries", async () => {
    const appId = await calls.newApp();
    const token = tokenServer();
    const route = rx.route(() => ({ status: 200, delayMs: 50 }));
    const endpointId = await newOAuthEndpoint(appId, `${rx.url}${route}`, token.url, {
      maxInFlight: 20,
    });
    const ids = await Promise.all(Array.from({ length: 30 }, () => calls.send(appId)));
    for (const id of ids) await calls.waitForStatus(id, endpointId, "delivered");
    expect(token.requests()).toHaveLength(1);
    const auth = new Set(rx.on(route).map((r) => r.headers.authorization));
    expect([...auth]).toEqual([`Bearer tok${new URL(token.url).pathname}-0`]);
    expect(rx.on(route)).toHaveLength(30);
  });

  test("a 401 fetches a new token once and the attempt is retried with it", async () => {
    const appId = await calls.newApp();
    const token = tokenServer();
    const stale = `Bearer tok${new URL(token.url).pathname}-0`;
    const route = rx.route((req) => ({ status: req.headers.authorization === stale ? 401 : 200 }));
    const endpointId = await newOAuthEndpoint(appId, `${rx.url}${route}`, token.url, {
      maxInFlight: 10,
    });
    const ids = await Promise.all(Array.from({ length: 10 }, () => calls.send(appId)));
    for (const id of ids) {
      const row = await calls.waitForStatus(id, endpointId, "delivered");
      expect(row.attempt_count).toBe(1);
    }
    expect(token.requests()).toHaveLength(2);
    const used = rx.on(route).map((r) => r.headers.authorization);
    expect(used.filter((a) => a !== stale)).toHaveLength(10);
  });

  test("a receiver that refuses every token: one retry per attempt, then a failed attempt", async () => {
    const appId = await calls.newApp();
    const token = tokenServer();
    const route = rx.route(() => ({ status: 401 }));
    const endpointId = await newOAuthEndpoint(appId, `${rx.url}${route}`, token.url, {
      maxAttempts: 1,
    });
    const id = await calls.send(appId);
    const row = await calls.waitForStatus(id, endpointId, "dead_letter");
    expect([row.last_status_code, row.attempt_count]).toEqual([401, 1]);
    expect(rx.on(route)).toHaveLength(2);
    expect(token.requests()).toHaveLength(2);
  });
});

describe("a token endpoint that fails", () => {
  const cases = [
    [
      "answers garbage",
      () => ({ status: 200, body: "<html>sign in</html>" }),
      /without an access_token/,
    ],
    ["never answers", () => ({ hang: true }), /did not answer within|no OAuth2 token within/],
    [
      "refuses the credentials",
      () => ({ status: 401, body: '{"error":"invalid_client"}' }),
      /refused the credentials \(HTTP 401: invalid_client\)/,
    ],
  ] as const;
  test.each(cases)(
    "%s: attempts of kind oauth, retried, the receiver never reached",
    async (_, script, message) => {
      const appId = await calls.newApp();
      const token = tokenServer(script);
      const route = rx.route();
      const endpointId = await newOAuthEndpoint(appId, `${rx.url}${route}`, token.url, {
        maxAttempts: 2,
        timeoutMs: 500,
      });
      const id = await calls.send(appId);
      const row = await calls.waitForStatus(id, endpointId, "dead_letter");
      expect([row.last_error_kind, row.attempt_count]).toEqual(["oauth", 2]);
      expect(rx.on(route)).toHaveLength(0);
      const attempts = await call("GET", `/api/v1/app/${appId}/attempt/msg/${id}`);
      expect(attempts.status).toBe(200);
      const { rows } = await h.db.pool.query(
        "select error_kind, error from attempts where message_id = $1 order by id",
        [id],
      );
      expect(rows).toHaveLength(2);
      for (const r of rows) {
        expect(r.error_kind).toBe("oauth");
        expect(r.error).toMatch(message);
      }
      await waitFor(() => token.requests().length >= 2, 5_000);
      // no latency sample (no request was made), but the circuit breaker counts them
      const health = await h.db.pool.query(
        `select (select count(*)::int from latency_samples where endpoint_id = $1) as samples,
              (select consecutive_failures from endpoint_health where endpoint_id = $1) as failures`,
        [endpointId],
      );
      expect(health.rows[0]).toEqual({ samples: 0, failures: 2 });
    },
  );
});

describe("the client secret", () => {
  test("key rotation: re-encryption re-seals it", async () => {
    const appId = await calls.newApp();
    const id = await newOAuthEndpoint(appId, `${rx.url}/rotated`, tokenServer().url);
    const read = async () =>
      (await h.db.pool.query("select oauth2_secret from endpoints where id = $1", [id])).rows[0]
        .oauth2_secret as string;
    const before = await read();
    const box = makeSecretBox(randomBytes(32).toString("base64"), [KEY]);
    await reencryptSecrets(h.db.pool, box);
    const after = await read();
    expect(after).not.toBe(before);
    expect(box.needsReseal(after)).toBe(false);
    expect(box.open(after)).toBe(SECRET);
  });

  test("echoed by the token endpoint, it is masked in the attempt's error", async () => {
    const appId = await calls.newApp();
    const token = tokenServer(() => ({
      status: 401,
      body: JSON.stringify({ error: "invalid_client", error_description: `bad secret ${SECRET}` }),
    }));
    const endpointId = await newOAuthEndpoint(appId, `${rx.url}${rx.route()}`, token.url, {
      maxAttempts: 1,
    });
    const id = await calls.send(appId);
    await calls.waitForStatus(id, endpointId, "dead_letter");
    const { rows } = await h.db.pool.query("select error from attempts where message_id = $1", [
      id,
    ]);
    expect(rows[0].error).toContain(
      "refused the credentials (HTTP 401: invalid_client: bad secret ***)",
    );
  });

  test("sealed under a key this worker lacks: a signing failure, logged without it", async () => {
    const appId = await calls.newApp();
    const endpointId = await newOAuthEndpoint(appId, `${rx.url}${rx.route()}`, tokenServer().url, {
      maxAttempts: 1,
    });
    const other = makeSecretBox(randomBytes(32).toString("base64"));
    await h.db.pool.query("update endpoints set oauth2_secret = $2 where id = $1", [
      endpointId,
      other.seal(SECRET),
    ]);
    const id = await calls.send(appId);
    const row = await calls.waitForStatus(id, endpointId, "dead_letter");
    expect(row.last_error_kind).toBe("signing");
    await waitFor(() =>
      logLines.some((l) => l.includes("OAuth2 client secret could not be opened")),
    );
  });

  test("appears in no API answer, attempt row or log line", async () => {
    const { rows } = await h.db.pool.query(
      "select coalesce(string_agg(coalesce(error, '') || coalesce(response_body, ''), ''), '') as t from attempts",
    );
    expect(answers.length).toBeGreaterThan(10);
    expect(logLines.length).toBeGreaterThan(0);
    for (const text of [...answers, rows[0].t, ...logLines]) expect(text).not.toContain(SECRET);
  });
});
