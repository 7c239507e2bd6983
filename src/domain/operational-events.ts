/**
 * Operational webhooks (docs/operational-webhooks.md): Svix-shaped events about deliveries
 * and endpoints, sent to the operator as messages of the operator application, so they go
 * through the same queue, retries and signing as every other message. Each event is written
 * in the transaction of the change it reports, so none is lost and none is invented. The
 * events and the rule that picks an attempt's (`attemptEvent`) are here; the SQL of the
 * result write that raises them is queue/operational-events.ts.
 *
 *   event                      raised when                                    by
 *   message.attempt.failing    attempt 4 of a delivery failed and it will be   the result write
 *                              retried (Svix: "on the fourth failure")
 *   message.attempt.exhausted  a delivery became a dead letter after an        the result write
 *                              attempt (attempts used up, or a permanent failure)
 *   message.attempt.recovered  a delivery succeeded after a failing or         the result write
 *                              exhausted event was sent about it
 *   endpoint.disabled          410 Gone (trigger automatic), or the API         the result write,
 *                              (trigger manual)                                 the API
 *   endpoint.enabled | created | updated | deleted   through the API           the API
 *
 * Deliveries and endpoints of the operator application raise no events: the events'
 * own deliveries never report on themselves.
 */
import { DeliveryStatus } from "./delivery-states.ts";

export const OperationalEvent = {
  attemptExhausted: "message.attempt.exhausted",
  attemptFailing: "message.attempt.failing",
  attemptRecovered: "message.attempt.recovered",
  endpointCreated: "endpoint.created",
  endpointUpdated: "endpoint.updated",
  endpointDeleted: "endpoint.deleted",
  endpointDisabled: "endpoint.disabled",
  endpointEnabled: "endpoint.enabled",
} as const;
export type OperationalEvent = (typeof OperationalEvent)[keyof typeof OperationalEvent];

export const OPERATIONAL_EVENT_TYPES: readonly OperationalEvent[] = Object.values(OperationalEvent);

/** The failed attempt that raises message.attempt.failing (Svix sends it on the fourth). */
export const FAILING_ATTEMPT = 4;

/** Where operational events go: the operator application, built once per process. */
export interface OperationalTarget {
  /** the operator application's id; its deliveries raise no events */
  appId: string;
  /** attempts of an event's delivery when its endpoint sets none */
  defaultMaxAttempts: number;
}

/** The event one attempt's result raises, if any. */
export function attemptEvent(result: {
  attemptNumber: number;
  nextStatus: string;
  success: boolean;
  /** a failing or exhausted event was sent about this delivery, and no recovered one since */
  failureNotified: boolean;
}): OperationalEvent | null {
  if (result.success) return result.failureNotified ? OperationalEvent.attemptRecovered : null;
  if (result.nextStatus === DeliveryStatus.deadLetter) return OperationalEvent.attemptExhausted;
  if (result.nextStatus === DeliveryStatus.failed && result.attemptNumber === FAILING_ATTEMPT)
    return OperationalEvent.attemptFailing;
  return null;
}
