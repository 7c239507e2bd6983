/**
 * OAuth2 access tokens for endpoints with client credentials (docs/oauth2.md): fetched from
 * the endpoint's token URL with the client-credentials grant (RFC 6749, section 4.4), kept
 * in this worker process until shortly before they expire, and shared by the worker's
 * concurrent requests.
 *
 * A cache entry per endpoint and credentials (`OAuth2Credentials.key`), in one of two states:
 *
 *   fetching  one token request in flight; every attempt that wants a token waits for it
 *             (single flight). Its answer makes the entry `held`; a failure removes the
 *             entry, and each attempt that waited fails with that error (kind `oauth`).
 *   held      a token, handed out until `refreshAtMs`: its lifetime (expires_in, else
 *             DEFAULT_LIFETIME_MS) less a margin (REFRESH_MARGIN_MS, at most half the
 *             lifetime). After that the next attempt starts a new fetch.
 *
 * `invalidate(creds, token)` (a receiver answered 401 to that token) removes a held entry
 * only while it still holds that token, so a burst of 401s to the same token starts one
 * fetch, not one each.
 *
 * The token request goes through the HTTP sender like a delivery: the SSRF guard vets every
 * address it connects to, it leaves the way the endpoint's requests do (its proxy, pool or
 * client certificate) and it has one deadline.
 */
import { performance } from "node:perf_hooks";
import { ErrorKind, Verdict } from "../../domain/retry-policy.ts";
import type { EgressRoute } from "../egress/egress-dispatchers.ts";
import { AttemptAbort, type AttemptResult, type HttpSender } from "../http-sender.ts";

/** A token without expires_in is kept this long (5 minutes). */
export const DEFAULT_LIFETIME_MS = 300_000;
/** A token is fetched again this long before it expires (at most half its lifetime). */
export const REFRESH_MARGIN_MS = 30_000;
/** The cache is dropped whole past this many entries (endpoints re-saved leave old ones). */
const MAX_ENTRIES = 10_000;
/** Most characters of a token endpoint's error text kept in an attempt's error. */
const MAX_REASON = 200;

/** An endpoint's OAuth2 client credentials, the secret opened. */
export interface OAuth2Credentials {
  /** names the endpoint and its settings (sealed secret included): one cache entry each */
  key: string;
  tokenUrl: string;
  clientId: string;
  clientSecret: string;
  scope: string | null;
  audience: string | null;
  authMethod: "client_secret_basic" | "client_secret_post";
}

/** A token, or the outcome of an attempt that got none (nothing was sent to the receiver). */
export type TokenAnswer = { ok: true; token: string } | { ok: false; result: AttemptResult };

export interface TokenRequestOptions {
  /** how long this attempt waits for a token (a fetch it starts has this deadline) */
  timeoutMs: number;
  /** how the endpoint's requests leave (docs/egress.md); the token request leaves the same way */
  egress?: EgressRoute;
  /** the attempt's abort handle: an aborted attempt stops waiting */
  abort?: AttemptAbort;
}

export interface OAuth2Tokens {
  /** A token for `creds`: the one held, or one fetched (one fetch in flight per key). */
  token(creds: OAuth2Credentials, options: TokenRequestOptions): Promise<TokenAnswer>;
  /** Drops `token` if the cache still holds it for `creds` (the receiver answered 401). */
  invalidate(creds: OAuth2Credentials, token: string): void;
  /** token requests made so far (tests; docs/oauth2.md) */
  readonly fetches: number;
}

export interface OAuth2TokensOptions {
  sender: HttpSender;
  /** the clock, in ms since the epoch; default Date.now */
  now?: () => number;
  userAgent?: string;
}

type Fetched =
  | { ok: true; token: string; refreshAtMs: number }
  | { ok: false; error: string; proxy?: boolean };

interface Entry {
  pending: Promise<Fetched> | null;
  token: string | null;
  refreshAtMs: number;
}

export function makeOAuth2Tokens(options: OAuth2TokensOptions): OAuth2Tokens {
  const { sender } = options;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  let fetches = 0;

  function start(creds: OAuth2Credentials, o: TokenRequestOptions): Entry {
    if (entries.size > MAX_ENTRIES) entries.clear();
    const entry: Entry = { pending: null, token: null, refreshAtMs: 0 };
    fetches++;
    entry.pending = fetchToken(sender, creds, o, now, options.userAgent).then((fetched) => {
      if (entries.get(creds.key) === entry) {
        if (fetched.ok) {
          entry.pending = null;
          entry.token = fetched.token;
          entry.refreshAtMs = fetched.refreshAtMs;
        } else {
          entries.delete(creds.key);
        }
      }
      return fetched;
    });
    entries.set(creds.key, entry);
    return entry;
  }

  return {
    get fetches() {
      return fetches;
    },

    async token(creds, o) {
      let entry = entries.get(creds.key);
      if (entry?.token != null && now() < entry.refreshAtMs)
        return { ok: true, token: entry.token };
      if (entry?.pending == null) entry = start(creds, o);
      const startedAt = new Date();
      const t0 = performance.now();
      const fetched = await waitFor(entry.pending!, o);
      if (fetched.ok) return { ok: true, token: fetched.token };
      return {
        ok: false,
        result: {
          startedAt,
          latencyMs: Math.round(performance.now() - t0),
          statusCode: null,
          verdict: Verdict.transient,
          errorKind: fetched.proxy ? ErrorKind.proxy : ErrorKind.oauth,
          error: fetched.error,
          responseBody: null,
          retryAfterMs: null,
        },
      };
    },

    invalidate(creds, token) {
      const entry = entries.get(creds.key);
      if (entry?.token === token) entries.delete(creds.key);
    },
  };
}

/** The shared fetch, or an error when this attempt's own time runs out or it is aborted. */
function waitFor(pending: Promise<Fetched>, o: TokenRequestOptions): Promise<Fetched> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      done({ ok: false, error: `no OAuth2 token within ${o.timeoutMs} ms (the token endpoint)` });
    }, o.timeoutMs);
    const onAbort = () => done({ ok: false, error: "aborted while waiting for an OAuth2 token" });
    o.abort?.once("abort", onAbort);
    if (o.abort?.aborted) onAbort();
    function done(w: Fetched) {
      clearTimeout(timer);
      o.abort?.off("abort", onAbort);
      resolve(w);
    }
    pending.then(done, (err: unknown) => done({ ok: false, error: `OAuth2: ${String(err)}` }));
  });
}

/** x-www-form-urlencoded value (RFC 6749, appendix B). */
const formValue = (v: string) => new URLSearchParams([["", v]]).toString().slice(1);

/** One token request, and what its answer means. */
async function fetchToken(
  sender: HttpSender,
  creds: OAuth2Credentials,
  o: TokenRequestOptions,
  now: () => number,
  userAgent = "hookrelay",
): Promise<Fetched> {
  const form: Array<[string, string]> = [["grant_type", "client_credentials"]];
  if (creds.scope) form.push(["scope", creds.scope]);
  if (creds.audience) form.push(["audience", creds.audience]);
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    accept: "application/json",
    "user-agent": userAgent,
  };
  if (creds.authMethod === "client_secret_post") {
    form.push(["client_id", creds.clientId], ["client_secret", creds.clientSecret]);
  } else {
    const pair = `${formValue(creds.clientId)}:${formValue(creds.clientSecret)}`;
    headers.authorization = `Basic ${Buffer.from(pair).toString("base64")}`;
  }
  const sentAt = now();
  // (its own abort handle: the fetch is shared, one attempt's abort must not end it)
  const answer = await sender.send({
    url: creds.tokenUrl,
    method: "POST",
    headers,
    body: new URLSearchParams(form).toString(),
    timeoutMs: o.timeoutMs,
    abort: new AttemptAbort(),
    ...(o.egress && { egress: o.egress }),
  });
  const at = `the OAuth2 token endpoint ${originOf(creds.tokenUrl)}`;
  if (answer.statusCode === null) {
    if (answer.errorKind === ErrorKind.proxy)
      return { ok: false, proxy: true, error: `${at}: ${answer.error}` };
    if (answer.errorKind === ErrorKind.timeout)
      return { ok: false, error: `${at} did not answer within ${o.timeoutMs} ms` };
    return {
      ok: false,
      error: `${at} could not be reached (${answer.errorKind}): ${answer.error}`,
    };
  }
  const status = answer.statusCode;
  const body = parseJson(answer.responseBody);
  if (status < 200 || status > 299) {
    const reason = oauthError(body);
    const refused = status === 400 || status === 401 || status === 403;
    return {
      ok: false,
      error: `${at} ${refused ? "refused the credentials" : "failed"} (HTTP ${status}${reason ? `: ${reason}` : ""})`,
    };
  }
  const token = body?.access_token;
  if (typeof token !== "string" || token === "" || /[\r\n\0]/.test(token))
    return { ok: false, error: `${at} answered HTTP ${status} without an access_token in JSON` };
  const type = body?.token_type;
  if (type !== undefined && (typeof type !== "string" || type.toLowerCase() !== "bearer"))
    return {
      ok: false,
      error: `${at} answered a token of type ${JSON.stringify(type).slice(0, 40)}, not Bearer`,
    };
  const expiresIn = Number(body?.expires_in);
  const lifetimeMs =
    body?.expires_in !== undefined && Number.isFinite(expiresIn)
      ? Math.max(0, expiresIn * 1000)
      : DEFAULT_LIFETIME_MS;
  const margin = Math.min(REFRESH_MARGIN_MS, lifetimeMs / 2);
  return { ok: true, token, refreshAtMs: sentAt + lifetimeMs - margin };
}

function parseJson(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

/** An OAuth2 error answer's `error` and `error_description` (RFC 6749, section 5.2). */
function oauthError(body: Record<string, unknown> | null): string {
  if (!body) return "";
  const parts = [body.error, body.error_description].filter((p) => typeof p === "string");
  return parts.join(": ").slice(0, MAX_REASON);
}

function originOf(url: string): string {
  try {
    const u = new URL(url);
    return u.origin + u.pathname;
  } catch {
    return "(unparsable URL)";
  }
}
