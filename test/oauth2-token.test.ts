/**
 * OAuth2 tokens (src/delivery/http/oauth2-token.ts, docs/oauth2.md) against a real token
 * server on 127.0.0.1, through the real HTTP sender and its SSRF guard: one fetch shared by
 * concurrent attempts, the token kept until shortly before it expires (a test clock moves
 * time; the test counts token requests), both client authentication methods, and each way
 * the token endpoint can fail: an attempt error of kind `oauth` whose message says why and
 * never holds the secret.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  DEFAULT_LIFETIME_MS,
  makeOAuth2Tokens,
  type OAuth2Credentials,
} from "../src/delivery/http/oauth2-token.ts";
import { AttemptAbort, makeHttpSender } from "../src/delivery/http-sender.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { type ScriptedReceiver, startScriptedReceiver } from "./helpers/deliveries.ts";
import type { Reply } from "./helpers/receiver.ts";

const SECRET = "s3cr3t-Client+Value/=";
let server: ScriptedReceiver;
const sender = makeHttpSender({ ssrfGuard: makeSsrfGuard({ allowlist: ["127.0.0.0/8"] }) });

beforeAll(async () => {
  server = await startScriptedReceiver();
});
afterAll(async () => {
  await sender.close();
  await server?.close();
});

let keys = 0;
/** Credentials for a token path whose answers `script` gives (n: the request's index). */
function tokenServer(script: (n: number) => Reply, extra: Partial<OAuth2Credentials> = {}) {
  const path = server.route((_req, n) => script(n));
  const creds: OAuth2Credentials = {
    key: `ep-${++keys}`,
    tokenUrl: `${server.url}${path}`,
    clientId: "client one",
    clientSecret: SECRET,
    scope: "deliver:write",
    audience: "https://receiver.example",
    authMethod: "client_secret_basic",
    ...extra,
  };
  return { creds, requests: () => server.on(path) };
}

const json = (body: unknown, status = 200): Reply => ({
  status,
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});
const issued = (n: number, expiresIn: number | null = 3600) =>
  json({
    access_token: `tok-${n}`,
    token_type: "Bearer",
    ...(expiresIn !== null && { expires_in: expiresIn }),
  });

describe("a token", () => {
  test("is fetched once for many concurrent attempts, with Basic client authentication", async () => {
    const { creds, requests } = tokenServer((n) => ({ ...issued(n), delayMs: 100 }));
    const tokens = makeOAuth2Tokens({ sender });
    const answers = await Promise.all(
      Array.from({ length: 25 }, () => tokens.token(creds, { timeoutMs: 5_000 })),
    );
    expect(answers.every((a) => a.ok && a.token === "tok-0")).toBe(true);
    expect(requests()).toHaveLength(1);
    expect(tokens.fetches).toBe(1);
    const req = requests()[0]!;
    expect(req.method).toBe("POST");
    expect(req.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    const basic = Buffer.from(`client+one:${encodeURIComponent(SECRET)}`).toString("base64");
    expect(req.headers.authorization).toBe(`Basic ${basic}`);
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({
      grant_type: "client_credentials",
      scope: "deliver:write",
      audience: "https://receiver.example",
    });
    // and kept: the next attempt asks no one
    expect(await tokens.token(creds, { timeoutMs: 5_000 })).toEqual({ ok: true, token: "tok-0" });
    expect(requests()).toHaveLength(1);
  });

  test("client_secret_post sends the id and secret as form fields", async () => {
    const { creds, requests } = tokenServer((n) => issued(n), {
      authMethod: "client_secret_post",
      scope: null,
      audience: null,
    });
    const tokens = makeOAuth2Tokens({ sender });
    expect((await tokens.token(creds, { timeoutMs: 5_000 })).ok).toBe(true);
    const req = requests()[0]!;
    expect(req.headers.authorization).toBeUndefined();
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({
      grant_type: "client_credentials",
      client_id: "client one",
      client_secret: SECRET,
    });
  });

  test("is fetched again shortly before it expires (expires_in less 30 s)", async () => {
    const { creds, requests } = tokenServer((n) => issued(n, 120));
    let now = 1_000_000;
    const tokens = makeOAuth2Tokens({ sender, now: () => now });
    const get = async () => {
      const a = await tokens.token(creds, { timeoutMs: 5_000 });
      return a.ok ? a.token : a.result.error;
    };
    expect(await get()).toBe("tok-0");
    now += 89_000;
    expect(await get()).toBe("tok-0");
    expect(requests()).toHaveLength(1);
    now += 2_000; // 91 s: inside the last 30 s of its 120
    expect(await get()).toBe("tok-1");
    expect(requests()).toHaveLength(2);
  });

  test("a short-lived token is kept for half its lifetime", async () => {
    const { creds, requests } = tokenServer((n) => issued(n, 10));
    let now = 0;
    const tokens = makeOAuth2Tokens({ sender, now: () => now });
    await tokens.token(creds, { timeoutMs: 5_000 });
    now = 4_900;
    await tokens.token(creds, { timeoutMs: 5_000 });
    expect(requests()).toHaveLength(1);
    now = 5_100;
    await tokens.token(creds, { timeoutMs: 5_000 });
    expect(requests()).toHaveLength(2);
  });

  test("without expires_in it is kept for the default lifetime less the margin", async () => {
    const { creds, requests } = tokenServer((n) => issued(n, null));
    let now = 0;
    const tokens = makeOAuth2Tokens({ sender, now: () => now });
    await tokens.token(creds, { timeoutMs: 5_000 });
    now = DEFAULT_LIFETIME_MS - 31_000;
    await tokens.token(creds, { timeoutMs: 5_000 });
    expect(requests()).toHaveLength(1);
    now = DEFAULT_LIFETIME_MS - 29_000;
    await tokens.token(creds, { timeoutMs: 5_000 });
    expect(requests()).toHaveLength(2);
  });

  test("invalidate drops only the token it names: a burst of 401s starts one fetch", async () => {
    const { creds, requests } = tokenServer((n) => issued(n));
    const tokens = makeOAuth2Tokens({ sender });
    await tokens.token(creds, { timeoutMs: 5_000 });
    tokens.invalidate(creds, "tok-0");
    const again = await Promise.all(
      Array.from({ length: 10 }, async () => {
        tokens.invalidate(creds, "tok-0"); // each attempt that got a 401 to tok-0
        return tokens.token(creds, { timeoutMs: 5_000 });
      }),
    );
    expect(again.every((a) => a.ok && a.token === "tok-1")).toBe(true);
    tokens.invalidate(creds, "tok-0"); // stale: tok-1 stays
    expect(await tokens.token(creds, { timeoutMs: 5_000 })).toEqual({ ok: true, token: "tok-1" });
    expect(requests()).toHaveLength(2);
  });
});

describe("a token endpoint that fails", () => {
  async function failure(script: (n: number) => Reply, timeoutMs = 5_000) {
    const { creds, requests } = tokenServer(script);
    const tokens = makeOAuth2Tokens({ sender });
    const answers = await Promise.all([
      tokens.token(creds, { timeoutMs }),
      tokens.token(creds, { timeoutMs }),
    ]);
    expect(requests()).toHaveLength(1); // shared, failure included
    const [a] = answers;
    if (a!.ok) throw new Error("a token was handed out");
    expect(a!.result).toMatchObject({ verdict: "transient", errorKind: "oauth", statusCode: null });
    expect(a!.result.error).not.toContain(SECRET);
    // a failure is not kept: the next attempt asks again
    await tokens.token(creds, { timeoutMs });
    expect(requests()).toHaveLength(2);
    return a!.result.error!;
  }

  test("answering garbage", async () => {
    const error = await failure(() => ({ status: 200, body: "<html>login</html>" }));
    expect(error).toMatch(/token endpoint .* answered HTTP 200 without an access_token in JSON/);
  });

  test("answering a token of another type", async () => {
    const error = await failure(() => json({ access_token: "x", token_type: "mac" }));
    expect(error).toContain('a token of type "mac", not Bearer');
  });

  test("refusing the credentials", async () => {
    const error = await failure(() =>
      json({ error: "invalid_client", error_description: "unknown client" }, 401),
    );
    expect(error).toMatch(/refused the credentials \(HTTP 401: invalid_client: unknown client\)$/);
  });

  test("failing with a 5xx", async () => {
    expect(await failure(() => ({ status: 503, body: "down" }))).toMatch(/failed \(HTTP 503\)$/);
  });

  test("never answering: the attempt's deadline", async () => {
    const error = await failure(() => ({ hang: true }), 300);
    expect(error).toMatch(/did not answer within 300 ms|no OAuth2 token within 300 ms/);
  });

  test("down: nothing listens", async () => {
    const tokens = makeOAuth2Tokens({ sender });
    const a = await tokens.token(
      { ...tokenServer(() => issued(0)).creds, tokenUrl: "http://127.0.0.1:9/token" },
      { timeoutMs: 2_000 },
    );
    expect(a.ok).toBe(false);
    if (!a.ok) {
      expect(a.result.errorKind).toBe("oauth");
      expect(a.result.error).toMatch(/could not be reached \(connection\)/);
    }
  });

  test("a token URL the SSRF guard refuses at connect time", async () => {
    const guarded = makeHttpSender({ ssrfGuard: makeSsrfGuard({ allowlist: [] }) });
    try {
      const { creds, requests } = tokenServer((n) => issued(n));
      const a = await makeOAuth2Tokens({ sender: guarded }).token(creds, { timeoutMs: 2_000 });
      expect(a.ok).toBe(false);
      if (!a.ok) {
        expect(a.result.errorKind).toBe("oauth");
        expect(a.result.error).toMatch(/could not be reached \(ssrf_blocked\)/);
      }
      expect(requests()).toHaveLength(0);
    } finally {
      await guarded.close();
    }
  });

  test("an attempt aborted while it waits stops waiting", async () => {
    const { creds } = tokenServer(() => ({ hang: true }));
    const tokens = makeOAuth2Tokens({ sender });
    const abort = new AttemptAbort();
    const waiting = tokens.token(creds, { timeoutMs: 5_000, abort });
    abort.abort();
    const a = await waiting;
    expect(!a.ok && a.result.error).toBe("aborted while waiting for an OAuth2 token");
  });
});
