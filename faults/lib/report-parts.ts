/**
 * What the fault suite's and the failover scenario's reports share: the per-delivery counts
 * (a delivery is message × endpoint: a message fanned out to 10 endpoints arrives 10 times,
 * and that is not a duplicate), the API's answers during the load, and the table layout.
 */
import type { LoadResult } from "./load.ts";
import type { FaultReceiver } from "./receiver.ts";

export interface DeliveryCounts {
  accepted: number;
  expected: number;
  delivered: number;
  lost: number;
  duplicated: number;
  /** deliveries of messages the API never acknowledged (should stay 0 with eventId) */
  unacknowledged: number;
}

export interface ApiAnswers {
  api503: number;
  api503WithoutRetryAfter: number;
  api500: number;
  apiOtherErrors: number;
  givenUp: number;
}

export function countDeliveries(
  load: LoadResult,
  receiver: FaultReceiver,
  endpoints: number,
): DeliveryCounts {
  const acceptedIds = new Set(load.accepted);
  let delivered = 0;
  let duplicated = 0;
  for (const id of acceptedIds) {
    for (let i = 0; i < endpoints; i++) {
      const n = receiver.delivered.get(`${id}|${i}`) ?? 0;
      if (n > 0) delivered++;
      if (n > 1) duplicated++;
    }
  }
  let unacknowledged = 0;
  for (const key of receiver.delivered.keys()) {
    if (!acceptedIds.has(key.slice(0, key.lastIndexOf("|")))) unacknowledged++;
  }
  const expected = acceptedIds.size * endpoints;
  return {
    accepted: acceptedIds.size,
    expected,
    delivered,
    lost: expected - delivered,
    duplicated,
    unacknowledged,
  };
}

export const apiAnswers = (load: LoadResult): ApiAnswers => ({
  api503: load.answers503,
  api503WithoutRetryAfter: load.missingRetryAfter,
  api500: load.answers500,
  apiOtherErrors: load.otherErrors,
  givenUp: load.givenUp,
});

/** A duration in seconds with one decimal, "-" for none. */
export const seconds = (ms: number | null) => (ms === null ? "-" : `${(ms / 1000).toFixed(1)} s`);

export type Row = [string, string];

export const deliveryRows = (g: DeliveryCounts): Row[] => [
  ["messages accepted (202)", String(g.accepted)],
  ["deliveries expected (message x endpoint)", String(g.expected)],
  ["deliveries arrived (2xx)", String(g.delivered)],
  ["LOST", String(g.lost)],
  ["duplicated (a delivery answered 2xx more than once)", String(g.duplicated)],
  ["delivered but never acknowledged", String(g.unacknowledged)],
];

export const apiRows = (g: ApiAnswers): Row[] => [
  [
    "API 503 answers (all with Retry-After?)",
    `${g.api503} (${g.api503WithoutRetryAfter === 0 ? "yes" : `${g.api503WithoutRetryAfter} without`})`,
  ],
  ["API 500 answers", String(g.api500)],
  ["API other errors / messages given up", `${g.apiOtherErrors} / ${g.givenUp}`],
];

/** Rows as an aligned two-column table. */
export function alignedTable(rows: Row[]): string {
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n");
}
