/**
 * What the broker transports share besides their prepare stage (broker-message.ts): the
 * SSRF guard on a broker's host, the deadline of one publish, and the outcome of one.
 *
 * A broker's host is vetted as an HTTP receiver's is (security/ssrf-guard.ts): resolved by
 * hookrelay, every address checked, and the client dials the checked address itself, so a
 * name that re-resolves to a private address cannot be reached (docs/destinations.md).
 */
import { performance } from "node:perf_hooks";
import type { AttemptOutcome, TransportDetail } from "../domain/attempt-outcome.ts";
import { ErrorKind, Verdict } from "../domain/retry-policy.ts";
import { isSsrfBlockedError, type SsrfGuard } from "../security/ssrf-guard.ts";
import { LinksClosedError } from "./broker-links.ts";
import { tlsFailureCode, tlsFailureMessage } from "./egress/tls-failure.ts";
import type { AbortHandle } from "./transport.ts";

/** Addresses dialled per connection, at most (as for HTTP: security/guarded-connector.ts). */
export const MAX_BROKER_ADDRESSES = 4;

/** The addresses to dial for a broker host, vetted; throws SsrfBlockedError or a DNS error. */
export async function brokerAddresses(guard: SsrfGuard, hostname: string): Promise<string[]> {
  const vetted = await guard.vetHost(hostname);
  // an allow-listed name is dialled as it is (the operator vouched for it)
  if (vetted.kind === "allowlisted-name") return [hostname];
  return vetted.addresses.slice(0, MAX_BROKER_ADDRESSES);
}

/** A failed attempt, classified. */
export interface BrokerFailure {
  verdict: Verdict;
  kind: ErrorKind;
  message: string;
}

/** Thrown inside a transport to end an attempt with its classification. */
export class BrokerAttemptError extends Error {
  constructor(
    readonly failure: BrokerFailure,
    options?: { cause?: unknown },
  ) {
    super(failure.message, options);
  }
}

const NETWORK: Record<string, { kind: ErrorKind; text: string }> = {
  ECONNREFUSED: { kind: ErrorKind.connection, text: "connection refused" },
  ECONNRESET: { kind: ErrorKind.connection, text: "connection reset" },
  EPIPE: { kind: ErrorKind.connection, text: "connection closed" },
  EHOSTUNREACH: { kind: ErrorKind.connection, text: "host unreachable" },
  ENETUNREACH: { kind: ErrorKind.connection, text: "network unreachable" },
  ETIMEDOUT: { kind: ErrorKind.timeout, text: "connection timed out" },
  ENOTFOUND: { kind: ErrorKind.dns, text: "the host name does not resolve" },
  EAI_AGAIN: { kind: ErrorKind.dns, text: "the host name could not be resolved now" },
};

/**
 * What a failure common to every broker means: the SSRF guard's refusal (a dead letter),
 * DNS, network and TLS errors (retried); null for one only its transport can read.
 */
export function commonFailure(err: unknown): BrokerFailure | null {
  if (err instanceof BrokerAttemptError) return err.failure;
  if (err instanceof LinksClosedError)
    return { verdict: Verdict.transient, kind: ErrorKind.connection, message: err.message };
  const tls = tlsFailureCode(err);
  if (tls !== null)
    return {
      verdict: Verdict.transient,
      kind: ErrorKind.tls,
      message: tlsFailureMessage(tls, (err as Error).message, "broker"),
    };
  if (isSsrfBlockedError(err))
    return {
      verdict: Verdict.permanent,
      kind: ErrorKind.ssrfBlocked,
      message: (err as Error).message,
    };
  const code = (err as { code?: unknown })?.code;
  const net = typeof code === "string" ? NETWORK[code] : undefined;
  if (net)
    return {
      verdict: Verdict.transient,
      kind: net.kind,
      message: `${net.text}: ${(err as Error).message}`,
    };
  return null;
}

/**
 * Runs `work` under the attempt's deadline and abort handle: a BrokerAttemptError of kind
 * timeout when the deadline passes, of kind connection when it is aborted (the drain). The
 * work itself may go on: at least once, the broker may still take the message.
 */
export function underDeadline<T>(
  work: Promise<T>,
  timeoutMs: number,
  abort: AbortHandle & { once?(event: "abort", fn: () => void): unknown },
): Promise<T> {
  if (abort.aborted) {
    work.catch(() => {});
    return Promise.reject(
      new BrokerAttemptError({
        verdict: Verdict.transient,
        kind: ErrorKind.connection,
        message: "publish aborted",
      }),
    );
  }
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(
            new BrokerAttemptError({
              verdict: Verdict.transient,
              kind: ErrorKind.timeout,
              message: `the broker did not confirm within ${timeoutMs} ms`,
            }),
          ),
        ),
      timeoutMs,
    );
    abort.once?.("abort", () =>
      finish(() =>
        reject(
          new BrokerAttemptError({
            verdict: Verdict.transient,
            kind: ErrorKind.connection,
            message: "publish aborted",
          }),
        ),
      ),
    );
    work.then(
      (value) => finish(() => resolve(value)),
      (err) => finish(() => reject(err)),
    );
  });
}

/** An attempt's outcome from its start (wall clock and performance.now()). */
export function brokerOutcome(
  startedAt: Date,
  t0: number,
  failure: BrokerFailure | null,
  response: string | null,
  detail: TransportDetail,
): AttemptOutcome {
  return {
    startedAt,
    latencyMs: Math.max(0, Math.round(performance.now() - t0)),
    verdict: failure === null ? Verdict.success : failure.verdict,
    errorKind: failure === null ? null : failure.kind,
    error: failure === null ? null : failure.message,
    response,
    retryAfterMs: null,
    // a copy: a publish that outlived its deadline may still fill in its own
    detail: { ...detail },
  };
}
