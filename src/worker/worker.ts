/**
 * A delivery worker: claims due deliveries in batches, sends them concurrently (up to
 * `concurrency` requests at once; the claim already respects each endpoint's in-flight
 * limit), and hands results to the batched result writer.
 *
 * Loop: claim as many rows as there are free slots → start their requests → if the claim
 * came back full, claim again as soon as slots free up; otherwise sleep until NOTIFY,
 * a finished request (endpoint room may have opened) or the poll interval. Once per poll
 * interval it also hands back the rows of claims whose lease ran out (their worker died).
 * Each claim's lease row is deleted with the write of its last result.
 *
 * stop(): no more claims; in-flight requests get until the drain deadline, their results
 * are written; requests still running then are aborted and their rows released (due
 * again at once, no attempt used). Safe to call twice.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Config } from "../config.ts";
import type { Pool } from "../db/pool.ts";
import {
  AttemptAbort,
  type AttemptResult,
  type HttpSender,
  MAX_RESPONSE_STORED_BYTES,
  truncateUtf8,
} from "../delivery/http-sender.ts";
import { ErrorKind, type RetryPolicy, Verdict } from "../delivery/retry-policy.ts";
import { secretKey, signatureHeader } from "../delivery/sign.ts";
import type { Logger } from "../logger.ts";
import { type ClaimedDelivery, claimDeliveries } from "../queue/claim-deliveries.ts";
import { afterAttempt } from "../queue/delivery-states.ts";
import type { DeliveryResult } from "../queue/record-results.ts";
import { releaseDeliveries, releaseExpiredClaims } from "../queue/release-deliveries.ts";
import { makeRedactor, type Redactor } from "../security/redact.ts";
import { makeSecretBox, type SecretBox } from "../security/secret-box.ts";
import { makeResultWriter } from "./result-writer.ts";
import { makeWakeableSleep } from "./wakeable-sleep.ts";

export const USER_AGENT = "hookrelay/0.1 (+webhook delivery)";

/** The outcome of an attempt that could not be signed (no request was sent). */
function signingFailure(err: unknown): AttemptResult {
  return {
    startedAt: new Date(),
    latencyMs: 0,
    statusCode: null,
    verdict: Verdict.transient,
    errorKind: ErrorKind.signing,
    error: `signing secret could not be opened: ${(err as Error).message}`,
    responseBody: null,
    retryAfterMs: null,
  };
}

export interface Worker {
  readonly id: string;
  start(): void;
  /** Drains and stops; resolves when every result is written and every unsent row released. */
  stop(): Promise<void>;
  /** Cuts the idle sleep short (NOTIFY arrived). */
  wake(): void;
  readonly inFlight: number;
}

export interface WorkerOptions {
  pool: Pool;
  sender: HttpSender;
  config: Pick<Config, "delivery" | "health" | "worker">;
  logger: Logger;
  /** Called after each batch of results is written (metrics, tests). */
  onResults?: (results: DeliveryResult[]) => void;
  /** Called with the size of every claim that took rows (metrics). */
  onClaim?: (size: number) => void;
  /** opens signing secrets sealed at rest; default: secrets are stored plain */
  secretBox?: SecretBox;
  /** masks sensitive values in stored error texts, response bodies and URLs */
  redactor?: Redactor;
}

interface Running {
  claim: ClaimedDelivery;
  token: string;
  /** aborted by the sender at the attempt's deadline, or by stop() */
  abort: AttemptAbort;
  /** stop() gave up on this request: its row is released, not recorded */
  released: boolean;
}

export function makeWorker(options: WorkerOptions): Worker {
  const { pool, sender, logger } = options;
  const { worker: cfg, delivery: defaults } = options.config;
  const id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const sleeper = makeWakeableSleep();
  const writer = makeResultWriter({
    pool,
    logger,
    flushBatch: cfg.flushBatch,
    flushIntervalMs: cfg.flushIntervalMs,
    health: options.config.health,
    onWritten: (batch) => {
      options.onResults?.(batch);
      // Written results free in-flight room in the database: claim again.
      sleeper.wake();
    },
  });
  const running = new Map<number, Running>();
  /** per claim token: how many of its rows have no result handed to the writer yet */
  const openClaims = new Map<string, number>();
  const keyCache = new Map<string, Buffer>();
  const maskedUrls = new Map<string, string>();
  const secretBox = options.secretBox ?? makeSecretBox(undefined);
  const redactor = options.redactor ?? makeRedactor();
  let stopping = false;
  let loop: Promise<void> | null = null;
  let stopped: Promise<void> | null = null;
  let lastClaimFull = false;
  let lastExpiryCheck = 0;

  async function runLoop(): Promise<void> {
    while (!stopping) {
      if (Date.now() - lastExpiryCheck >= cfg.pollIntervalMs) {
        lastExpiryCheck = Date.now();
        // Rows of claims whose worker died come back here (any worker may do it).
        await releaseExpiredClaims(pool).catch((err) =>
          logger.error({ err }, "handing back expired claims failed"),
        );
      }
      const free = cfg.concurrency - running.size;
      // Wait for a meaningful number of free slots rather than claiming one row at a time.
      const worthClaiming = free >= Math.min(cfg.claimBatch, Math.ceil(cfg.concurrency / 4));
      if (worthClaiming) {
        const limit = Math.min(free, cfg.claimBatch);
        try {
          const claimed = await claimBatch(limit);
          // A full claim means more may be due: claim again as slots free up. Otherwise new
          // work arrives by NOTIFY, and endpoint room freed by results wakes us after writes.
          lastClaimFull = claimed === limit;
          if (lastClaimFull) continue;
        } catch (err) {
          logger.error({ err }, "claim failed");
          lastClaimFull = false;
        }
      }
      await sleeper.sleep(cfg.pollIntervalMs);
    }
  }

  async function claimBatch(limit: number): Promise<number> {
    const token = randomUUID();
    const claims = await claimDeliveries(pool, {
      workerId: id,
      claimToken: token,
      limit,
      defaultMaxInFlight: defaults.maxInFlight,
      defaultTimeoutMs: defaults.timeoutMs,
      leaseMarginMs: cfg.leaseMarginMs,
    });
    if (claims.length > 0) {
      options.onClaim?.(claims.length);
      openClaims.set(token, claims.length);
    }
    for (const claim of claims) {
      const entry: Running = { claim, token, abort: new AttemptAbort(), released: false };
      running.set(claim.id, entry);
      void deliver(entry);
    }
    return claims.length;
  }

  function keysFor(secrets: string[]): Buffer[] {
    return secrets.map((secret) => {
      let key = keyCache.get(secret);
      if (!key) {
        key = secretKey(secretBox.open(secret));
        if (keyCache.size > 10_000) keyCache.clear();
        keyCache.set(secret, key);
      }
      return key;
    });
  }

  async function deliver(entry: Running): Promise<void> {
    const { claim } = entry;
    try {
      const timestamp = Math.floor(Date.now() / 1000);
      let keys: Buffer[];
      try {
        keys = keysFor(claim.secrets);
      } catch (err) {
        // A secret sealed under a key this process lacks: nothing can be sent. Recorded as a
        // failed attempt (retried with backoff, then dead-lettered), so the operator sees it
        // and no row circles through lease expiries forever.
        logger.error({ err, endpointId: claim.endpointId }, "signing secret could not be opened");
        writer.add(toResult(entry, signingFailure(err)));
        return;
      }
      const headers: Record<string, string> = {
        ...claim.headers,
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": claim.messageId,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signatureHeader(keys, claim.messageId, timestamp, claim.payload),
      };
      const result = await sender.send({
        url: claim.url,
        headers,
        body: claim.payload,
        timeoutMs: claim.timeoutMs,
        abort: entry.abort,
      });
      if (entry.released) {
        // Aborted by the drain deadline: released by stop(), not counted as an attempt.
        return;
      }
      writer.add(toResult(entry, result));
    } catch (err) {
      logger.error({ err, deliveryId: claim.id }, "delivery crashed; its lease will bring it back");
    } finally {
      if (!entry.released) running.delete(claim.id);
      if (lastClaimFull || stopping) sleeper.wake();
    }
  }

  /**
   * The error text and the stored response body with sensitive values masked: by field name
   * and, since receivers echo them in prose, every value of the payload's sensitive fields.
   * Masked first, then cut to 1 KiB.
   */
  function maskedTexts(payload: string, result: AttemptResult) {
    if (result.error === null && result.responseBody === null)
      return { error: null, responseBody: null };
    // (valuesIn keeps values of 4+ characters: a shorter text cannot contain one)
    const values =
      (result.error?.length ?? 0) >= 4 || (result.responseBody?.length ?? 0) >= 4
        ? redactor.valuesIn(payload)
        : [];
    return {
      error: result.error === null ? null : redactor.textWithout(result.error, values),
      responseBody:
        result.responseBody === null
          ? null
          : truncateUtf8(
              // a window well past the cut, so a value straddling the 1 KiB limit is still seen whole
              Buffer.from(
                redactor.textWithout(
                  result.responseBody.slice(0, 4 * MAX_RESPONSE_STORED_BYTES),
                  values,
                ),
              ),
              MAX_RESPONSE_STORED_BYTES,
            ),
    };
  }

  /** An endpoint URL as stored in its attempt rows (sensitive query values masked). */
  function maskedUrl(url: string): string {
    let masked = maskedUrls.get(url);
    if (masked === undefined) {
      masked = redactor.url(url);
      if (maskedUrls.size > 10_000) maskedUrls.clear();
      maskedUrls.set(url, masked);
    }
    return masked;
  }

  function toResult(entry: Running, result: AttemptResult): DeliveryResult {
    const { claim } = entry;
    const attemptNumber = claim.attemptCount + 1;
    const policy: RetryPolicy = {
      maxAttempts: claim.maxAttempts,
      baseMs: claim.retryBaseMs ?? defaults.retryBaseMs,
      capMs: claim.retryCapMs ?? defaults.retryCapMs,
    };
    const next = afterAttempt(result.verdict, attemptNumber, policy, result.retryAfterMs);
    // A Retry-After on 429/503 pauses the whole endpoint, not just this delivery.
    const pauseMs =
      result.retryAfterMs === null ? null : Math.min(policy.capMs, result.retryAfterMs);
    return {
      deliveryId: claim.id,
      claimToken: entry.token,
      messageId: claim.messageId,
      endpointId: claim.endpointId,
      appId: claim.appId,
      trigger: claim.trigger,
      url: maskedUrl(claim.url),
      attemptNumber,
      nextStatus: next.status,
      retryDelayMs: next.retryDelayMs,
      startedAt: result.startedAt,
      latencyMs: result.latencyMs,
      success: result.verdict === Verdict.success,
      statusCode: result.statusCode,
      errorKind: result.errorKind,
      ...maskedTexts(claim.payload, result),
      isProbe: claim.isProbe,
      pauseMs,
      finishesClaim: finishOne(entry.token),
    };
  }

  /** Counts one more row of a claim as done; true for its last one. */
  function finishOne(token: string): boolean {
    const left = (openClaims.get(token) ?? 1) - 1;
    if (left > 0) {
      openClaims.set(token, left);
      return false;
    }
    openClaims.delete(token);
    return true;
  }

  async function drain(): Promise<void> {
    stopping = true;
    sleeper.wake();
    await loop;
    const deadline = Date.now() + cfg.shutdownTimeoutMs;
    while (running.size > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const unfinished = [...running.values()];
    for (const entry of unfinished) {
      entry.released = true;
      entry.abort.abort();
    }
    // If the database is unreachable, results cannot be written: give up after a grace
    // period rather than hang; the rows are still leased and will be retried.
    const flushed = await Promise.race([
      writer.flush().then(() => true),
      new Promise<false>((r) =>
        setTimeout(() => r(false), Math.max(5_000, deadline - Date.now())).unref(),
      ),
    ]);
    if (!flushed) {
      logger.error(
        { waiting: writer.waiting },
        "could not write results before exit; leases will retry them",
      );
      return;
    }
    if (unfinished.length > 0) {
      const released = await releaseDeliveries(
        pool,
        unfinished.map((e) => ({ deliveryId: e.claim.id, claimToken: e.token })),
      );
      logger.warn({ released }, "requests still running at the drain deadline were released");
    }
    running.clear();
  }

  return {
    id,
    start() {
      if (loop || stopping) return;
      loop = runLoop();
    },
    stop() {
      stopped ??= drain();
      return stopped;
    },
    wake() {
      sleeper.wake();
    },
    get inFlight() {
      return running.size;
    },
  };
}
