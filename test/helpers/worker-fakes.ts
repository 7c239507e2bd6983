/**
 * Fakes for the worker's unit tests (src/worker/*.test.ts): a claimed row, a transport
 * whose sends the test settles, and a logger that keeps its lines.
 */
import {
  type AbortHandle,
  notAttempted,
  type Preparation,
  type Transport,
} from "../../src/delivery/transport.ts";
import type { AttemptOutcome } from "../../src/domain/attempt-outcome.ts";
import type { ErrorKind } from "../../src/domain/retry-policy.ts";
import type { Logger } from "../../src/logger.ts";
import type { ClaimedDelivery } from "../../src/queue/claim-deliveries.ts";

export function claimedRow(id: number, extra: Partial<ClaimedDelivery> = {}): ClaimedDelivery {
  return {
    id,
    messageMs: 0,
    messageId: `msg_${id}`,
    endpointId: "ep_1",
    appId: "app_1",
    attemptCount: 0,
    maxAttempts: 3,
    trigger: "scheduled",
    eventType: "t",
    payload: "{}",
    url: "https://example.test/hook",
    headers: {},
    timeoutMs: 1_000,
    retryBaseMs: null,
    retryCapMs: null,
    secrets: [],
    isProbe: false,
    eventId: null,
    method: "POST",
    bodyFormat: "json",
    urlToken: null,
    missingFields: "fail",
    successRule: null,
    failureNotified: false,
    ...extra,
  };
}

export function outcomeOf(extra: Partial<AttemptOutcome> = {}): AttemptOutcome {
  return {
    startedAt: new Date(0),
    latencyMs: 1,
    verdict: "success",
    errorKind: null,
    error: null,
    response: null,
    retryAfterMs: null,
    detail: { transport: "http", statusCode: 200 },
    ...extra,
  };
}

/** A preparation that failed: nothing to send, an outcome at once (permanent unless signing). */
export function notAttemptedPreparation(errorKind: ErrorKind, note: string): Preparation<number> {
  const verdict = errorKind === "signing" ? "transient" : "permanent";
  return {
    ok: false,
    error: new Error(note),
    note,
    outcome: notAttempted(verdict, errorKind, `${note}: why`, {
      transport: "http",
      statusCode: null,
    }),
  };
}

/** A send the test settles; `abort` is the handle the pipeline gave it. */
export interface PendingSend {
  deliveryId: number;
  abort: AbortHandle & { reason?: Error };
  settle(outcome: AttemptOutcome): void;
}

/**
 * A transport that prepares every row as its id (or as `refuse` says) and keeps each send
 * pending until the test settles it.
 */
export function fakeTransport(
  refuse: (id: number) => Preparation<number> | null = () => null,
): Transport<number> & { sends: PendingSend[]; prepared: number[] } {
  const sends: PendingSend[] = [];
  const prepared: number[] = [];
  return {
    kind: "http",
    sends,
    prepared,
    prepare(delivery) {
      prepared.push(delivery.id);
      return (
        refuse(delivery.id) ?? {
          ok: true,
          request: delivery.id,
          shown: { shownUrl: `shown ${delivery.id}`, secrets: [] },
        }
      );
    },
    send(request, abort) {
      return new Promise((resolve) =>
        sends.push({ deliveryId: request, abort: abort as PendingSend["abort"], settle: resolve }),
      );
    },
    newAbort() {
      const handle = {
        aborted: false,
        abort() {
          handle.aborted = true;
        },
      };
      return handle;
    },
    close: async () => {},
  };
}

export interface Line {
  level: string;
  obj: unknown;
  msg: string;
}

/** A logger that keeps its lines (pino's overloads are more than the worker uses). */
export function keptLogger(): Pick<Logger, "info" | "warn" | "error"> & { lines: Line[] } {
  const lines: Line[] = [];
  const at = (level: string) => (obj: unknown, msg: string) => void lines.push({ level, obj, msg });
  return { lines, info: at("info"), warn: at("warn"), error: at("error") } as never;
}

/** Lets promise callbacks queued so far run. */
export async function settled(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}
