/**
 * One HTTP attempt: a POST (or an endpoint's GET or PUT) through a shared undici Agent (keep-alive pools per origin), under
 * one absolute deadline that covers connect, headers and body, so a receiver that drips
 * bytes cannot outlive its timeout. Redirects are never followed (undici does not follow
 * them unless asked). At most 64 KiB of the response is read, 1 KiB kept, as text that
 * PostgreSQL can store whatever the receiver sent (response-body.ts).
 */
import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import type { Readable } from "node:stream";
import type { Dispatcher } from "undici";
import type { EgressConfig } from "../config.ts";
import { isBackpressure } from "../domain/backpressure.ts";
import { ErrorKind, type Verdict } from "../domain/retry-policy.ts";
import { isSsrfBlockedError, type SsrfGuard } from "../security/ssrf-guard.ts";
import { type EgressRoute, makeEgressDispatchers } from "./egress/egress-dispatchers.ts";
import { isProxyError } from "./egress/proxy-tunnel.ts";
import { tlsFailureCode, tlsFailureMessage } from "./egress/tls-failure.ts";
import { classifyStatus, RETRY_AFTER_STATUSES } from "./http-status.ts";
import { readableBody } from "./response-body.ts";
import { parseRetryAfter } from "./retry-after.ts";

export const MAX_RESPONSE_READ_BYTES = 64 * 1024;
export const MAX_RESPONSE_STORED_BYTES = 1024;

export interface OutboundRequest {
  url: string;
  /** default POST */
  method?: "POST" | "GET" | "PUT";
  /**
   * A rendered URL template's origin and request target (delivery/url-template.ts), sent
   * as they are; without them `url` is parsed (once per URL, cached).
   */
  target?: { origin: string; path: string };
  headers: Record<string, string>;
  /** null: no body (GET) */
  body: string | null;
  /** timeoutMs: absolute deadline of the whole attempt. */
  timeoutMs: number;
  /**
   * Aborts the attempt early (shutdown) when the caller aborts it. The sender aborts it
   * too when the deadline passes: one per attempt, no derived signals.
   */
  abort?: AttemptAbort;
  /**
   * The endpoint's egress settings (a proxy, a pool, TLS options: docs/egress.md); absent:
   * the sender's shared Agent (through HOOKRELAY_EGRESS_PROXY when set).
   */
  egress?: EgressRoute;
}

/**
 * Aborts one attempt. undici takes an EventEmitter with `aborted` and `reason` as a
 * request's signal, as well as an AbortSignal; one is made for every attempt, and an
 * AbortController with its listener added and removed costs about 3.5 µs here, this 0.2.
 */
export class AttemptAbort extends EventEmitter {
  aborted = false;
  /** undefined: undici reports its own RequestAbortedError */
  reason: Error | undefined = undefined;

  abort(reason?: Error): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit("abort");
  }
}

export interface AttemptResult {
  startedAt: Date;
  /** Monotonic milliseconds from sending to the end of reading the response. */
  latencyMs: number;
  statusCode: number | null;
  verdict: Verdict;
  errorKind: ErrorKind | null;
  error: string | null;
  /**
   * The response body as read (at most 64 KiB), if any, as readable text: decompressed, or
   * described when it is binary (response-body.ts). The caller masks sensitive values
   * and then keeps the first MAX_RESPONSE_STORED_BYTES (masking first, so a value cut in
   * half by the limit is still masked).
   */
  responseBody: string | null;
  /** Parsed Retry-After of a 429/503, in ms. */
  retryAfterMs: number | null;
}

export interface HttpSender {
  send(request: OutboundRequest): Promise<AttemptResult>;
  close(): Promise<void>;
}

export interface HttpSenderOptions {
  /** Checks every address before connecting (docs/security.md, SSRF guard); refused URLs fail as ssrf_blocked. */
  ssrfGuard: SsrfGuard;
  /** connectionsPerOrigin: most sockets per origin. Default: no limit of its own. */
  connectionsPerOrigin?: number;
  /** egress: the process-wide proxy and the named pools (docs/egress.md). Default: none. */
  egress?: EgressConfig;
}

export function makeHttpSender(options: HttpSenderOptions): HttpSender {
  const dispatchers = makeEgressDispatchers({
    guard: options.ssrfGuard,
    egress: options.egress ?? { proxy: null, pools: {} },
    agentOptions: {
      // Unlimited per origin: endpoints on one host must not queue behind each other's hanging
      // requests. The claim bounds each endpoint (maxInFlight) and the worker bounds the total.
      connections: options.connectionsPerOrigin ?? null,
      keepAliveTimeout: 10_000,
      // The absolute deadline below is what limits an attempt; these only stop undici's own
      // 300 s defaults from mattering.
      headersTimeout: 0,
      bodyTimeout: 0,
    },
  });

  // The origin and path of each endpoint URL, parsed once (a URL object per attempt was a
  // measurable share of what a busy worker allocates).
  const targets = new Map<string, { origin: string; path: string } | null>();
  function targetOf(raw: string): { origin: string; path: string } | null {
    let target = targets.get(raw);
    if (target === undefined) {
      try {
        const url = new URL(raw);
        target = { origin: url.origin, path: url.pathname + url.search };
      } catch {
        target = null;
      }
      if (targets.size > 10_000) targets.clear();
      targets.set(raw, target);
    }
    return target;
  }

  async function send(request: OutboundRequest): Promise<AttemptResult> {
    const startedAt = new Date();
    const t0 = performance.now();
    const target = request.target ?? targetOf(request.url);
    if (target === null)
      return failure(startedAt, t0, "permanent", ErrorKind.invalidRequest, "invalid endpoint URL");
    const agent = dispatchers.dispatcherFor(request.egress);
    if ("refused" in agent)
      return failure(startedAt, t0, "transient", ErrorKind.proxy, agent.refused.message);
    const controller = request.abort ?? new AttemptAbort();
    const deadline = new AttemptDeadline(controller, request.timeoutMs);
    try {
      const pending = agent.request({
        origin: target.origin,
        path: target.path,
        method: request.method ?? "POST",
        headers: request.headers,
        body: request.body ?? undefined,
        signal: controller,
      });
      // undici looks at the signal only once the request has a socket; the deadline must
      // also cover any wait for one.
      let response: Dispatcher.ResponseData;
      try {
        response = await deadline.race(pending);
      } catch (err) {
        pending.then(discardLateResponse, ignore);
        throw err;
      }
      const body = await readCapped(response.body, MAX_RESPONSE_READ_BYTES);
      const responseBody =
        body.length === 0
          ? null
          : await readableBody(
              body,
              body.length >= MAX_RESPONSE_READ_BYTES,
              headerValue(response.headers["content-encoding"]),
              MAX_RESPONSE_READ_BYTES,
            );
      const status = response.statusCode;
      const { verdict, errorKind } = classifyStatus(status);
      const retryAfterMs = RETRY_AFTER_STATUSES.has(status)
        ? parseRetryAfter(headerValue(response.headers["retry-after"]))
        : null;
      return {
        startedAt,
        latencyMs: Math.round(performance.now() - t0),
        statusCode: status,
        verdict,
        errorKind: isBackpressure(status, retryAfterMs) ? ErrorKind.rateLimited : errorKind,
        error: verdict === "success" ? null : `HTTP ${status}`,
        responseBody,
        retryAfterMs,
      };
    } catch (err) {
      if (isSsrfBlockedError(err)) {
        return failure(startedAt, t0, "permanent", ErrorKind.ssrfBlocked, (err as Error).message);
      }
      if ((err as { code?: string }).code === "UND_ERR_INVALID_ARG") {
        // The request itself cannot be sent (e.g. an invalid header): retrying cannot help.
        return failure(
          startedAt,
          t0,
          "permanent",
          ErrorKind.invalidRequest,
          `invalid request: ${(err as Error).message}`,
        );
      }
      const { kind, message } = describeError(err, deadline.passed, request.timeoutMs);
      return failure(startedAt, t0, "transient", kind, message);
    } finally {
      deadline.clear();
    }
  }

  return {
    send,
    async close() {
      await dispatchers.close();
    },
  };
}

/**
 * The deadline of one attempt: a plain timer (cleared when the attempt ends) that aborts
 * the controller, which ends the request or the body being read, and rejects a wait for
 * the response head, which ends a wait for a socket. A class, not closures: one is made
 * for every attempt.
 */
class AttemptDeadline {
  passed = false;
  readonly #controller: AttemptAbort;
  readonly #timeoutMs: number;
  readonly #timer: NodeJS.Timeout;
  #rejectWait: ((err: Error) => void) | null = null;

  constructor(controller: AttemptAbort, timeoutMs: number) {
    this.#controller = controller;
    this.#timeoutMs = timeoutMs;
    this.#timer = setTimeout(expire, timeoutMs, this);
  }

  /**
   * `pending`, or a rejection if the deadline passes first. (A rejection after the race
   * has settled is still handled: the race listens to both promises.)
   */
  race<T>(pending: Promise<T>): Promise<T> {
    const passed = new Promise<never>((_, reject) => {
      this.#rejectWait = reject;
    });
    return Promise.race([pending, passed]);
  }

  expire(): void {
    this.passed = true;
    const err = new Error(`no complete response within ${this.#timeoutMs} ms`);
    err.name = "TimeoutError";
    this.#controller.abort(err);
    this.#rejectWait?.(err);
  }

  clear(): void {
    clearTimeout(this.#timer);
  }
}

function expire(deadline: AttemptDeadline): void {
  deadline.expire();
}

/** An attempt that got no HTTP answer (or could not be made). */
function failure(
  startedAt: Date,
  t0: number,
  verdict: Verdict,
  errorKind: ErrorKind,
  error: string,
): AttemptResult {
  return {
    startedAt,
    latencyMs: Math.round(performance.now() - t0),
    statusCode: null,
    verdict,
    errorKind,
    error,
    responseBody: null,
    retryAfterMs: null,
  };
}

function discardLateResponse(late: Dispatcher.ResponseData): void {
  late.body.destroy();
}

function ignore(): void {}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

const EMPTY = Buffer.alloc(0);

function joinChunks(chunks: Buffer[]): Buffer {
  return chunks.length === 0 ? EMPTY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/**
 * Reads at most `limit` bytes; a longer body is cut off (and its socket dropped). Reads by
 * events, not `for await`: an async iterator costs a promise per chunk and a generator per
 * response, on every attempt.
 */
function readCapped(body: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    body.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= limit) {
        ended = true;
        body.destroy();
        resolve(joinChunks(chunks).subarray(0, limit));
      }
    });
    body.once("end", () => {
      ended = true;
      resolve(joinChunks(chunks));
    });
    body.once("error", reject);
    body.once("close", () => {
      // (an error was reported already, if there was one; an Error costs a stack trace)
      if (!ended) reject(new Error("response body closed before its end"));
    });
  });
}

/** The first `maxBytes` of a body as text, never splitting a UTF-8 character. */
export function truncateUtf8(bytes: Buffer, maxBytes: number): string {
  if (bytes.length <= maxBytes) return bytes.toString("utf8");
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) so the cut lands on a character boundary.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_FAIL"]);
const TIMEOUT_CODES = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ETIMEDOUT",
]);

function describeError(err: unknown, deadlinePassed: boolean, timeoutMs: number) {
  if (deadlinePassed) {
    return { kind: ErrorKind.timeout, message: `no complete response within ${timeoutMs} ms` };
  }
  // the proxy failed us: not the endpoint's fault (docs/egress.md)
  if (isProxyError(err)) return { kind: ErrorKind.proxy, message: (err as Error).message };
  const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const tls = tlsFailureCode(err);
  if (tls !== null) {
    const message = (e.cause as { message?: string } | undefined)?.message ?? e.message ?? "";
    return { kind: ErrorKind.tls, message: tlsFailureMessage(tls, message) };
  }
  const code = e.code ?? e.cause?.code ?? "";
  if (DNS_CODES.has(code)) return { kind: ErrorKind.dns, message: `DNS lookup failed (${code})` };
  if (TIMEOUT_CODES.has(code)) return { kind: ErrorKind.timeout, message: `timed out (${code})` };
  if (e.name === "AbortError") return { kind: ErrorKind.connection, message: "request aborted" };
  return {
    kind: ErrorKind.connection,
    message: `connection failed${code ? ` (${code})` : ""}: ${e.message ?? String(err)}`,
  };
}
