/** A delivery result as the worker hands it to the result writer: a 200 on a first attempt. */
import type { DeliveryResult } from "../../src/queue/record-results.ts";

export function successResult(changes: Partial<DeliveryResult> = {}): DeliveryResult {
  return {
    deliveryId: 1,
    messageMs: 0,
    claimToken: "00000000-0000-0000-0000-000000000000",
    messageId: "msg_x",
    endpointId: "ep_x",
    appId: "app_x",
    trigger: "scheduled",
    url: "http://127.0.0.1:9/",
    attemptNumber: 1,
    nextStatus: "delivered",
    retryDelayMs: 0,
    startedAt: new Date(),
    latencyMs: 5,
    success: true,
    statusCode: 200,
    errorKind: null,
    error: null,
    responseBody: null,
    isProbe: false,
    pauseMs: null,
    ...changes,
  };
}
