/**
 * The outcome of one delivery attempt, whatever carried it (docs/architecture.md, the
 * transport seam): what a transport's send returns (delivery/transport.ts) and the worker
 * turns into a result (worker/record-attempt.ts). The transport's own detail is a part of
 * it, one shape per transport.
 */
import type { ErrorKind, Verdict } from "./retry-policy.ts";

/**
 * What a transport adds to an outcome of its own. HTTP: the response's status code (null
 * when no response came), stored in attempts.status_code.
 */
export type TransportDetail = { transport: "http"; statusCode: number | null };

/** The outcome of one attempt, whatever carried it. */
export interface AttemptOutcome {
  /** when the attempt began (wall clock: stored) */
  startedAt: Date;
  /** monotonic milliseconds the attempt took */
  latencyMs: number;
  verdict: Verdict;
  /** why it failed (null on success): attempts.error_kind */
  errorKind: ErrorKind | null;
  /** a sentence for people, unmasked (the recorder masks it) */
  error: string | null;
  /**
   * What the destination answered, as readable text, for storage (attempts.response_body):
   * at most what the transport read; the recorder masks it, then keeps the first 1 KiB.
   */
  response: string | null;
  /** the destination asked to be left alone this long (HTTP Retry-After), in ms */
  retryAfterMs: number | null;
  detail: TransportDetail;
}
