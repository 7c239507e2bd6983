/**
 * The circuit breaker, one per endpoint (docs/delivery.md, Circuit breaker). Its states and
 * every transition, with the SQL that performs each, are in health/circuit-transitions.ts;
 * this module folds a batch of attempt outcomes into what the result write's transitions
 * read (outcomeTransitionsSql), one row per endpoint.
 */

/**
 * What one batch of results says about one endpoint, apart from what depends on which
 * results were stale (how many in-flight slots are released, whether the probe's result
 * counts): the statement that writes the batch works that out from the rows it moved.
 */
export interface EndpointOutcome {
  endpointId: string;
  /** the batch holds at least one success */
  anyOk: boolean;
  /** failures after the batch's last success (all failures if none succeeded) */
  trailingFailures: number;
  lastOkAt: Date | null;
  lastFailAt: Date | null;
  /** pause the endpoint this long (Retry-After on 429/503, already clamped) */
  pauseMs: number | null;
  /** the batch's delivered answers (each widens a resuming endpoint's room by one) */
  okCount: number;
}

export interface CircuitAttempt {
  endpointId: string;
  success: boolean;
  startedAt: Date;
  pauseMs: number | null;
  /**
   * Nothing reached the endpoint (a payload without a field its URL template needs): the
   * result says nothing about the endpoint's health and neither opens nor closes its circuit.
   */
  notSent?: boolean;
  /**
   * A backpressure answer (docs/delivery.md, Backpressure): the endpoint asked to slow
   * down, it is not failing; only its pause counts.
   */
  backpressure?: boolean;
}

/** Folds a batch of attempt outcomes into one outcome per endpoint, in endpoint id order. */
export function summarizeOutcomes(attempts: readonly CircuitAttempt[]): EndpointOutcome[] {
  const byEndpoint = new Map<string, CircuitAttempt[]>();
  for (const a of attempts) {
    const list = byEndpoint.get(a.endpointId);
    if (list) list.push(a);
    else byEndpoint.set(a.endpointId, [a]);
  }
  const out: EndpointOutcome[] = [];
  for (const [endpointId, list] of byEndpoint) {
    list.sort((a, b) => a.startedAt.getTime() - b.startedAt.getTime());
    let trailing = 0;
    let anyOk = false;
    let lastOkAt: Date | null = null;
    let lastFailAt: Date | null = null;
    let pauseMs: number | null = null;
    let okCount = 0;
    for (const a of list) {
      if (a.notSent) continue;
      if (a.pauseMs !== null) pauseMs = Math.max(pauseMs ?? 0, a.pauseMs);
      if (a.backpressure) continue;
      if (a.success) {
        okCount++;
        anyOk = true;
        trailing = 0;
        lastOkAt = a.startedAt;
      } else {
        trailing++;
        lastFailAt = a.startedAt;
      }
    }
    out.push({
      endpointId,
      anyOk,
      trailingFailures: trailing,
      lastOkAt,
      lastFailAt,
      pauseMs,
      okCount,
    });
  }
  return out.sort((a, b) =>
    a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0,
  );
}
