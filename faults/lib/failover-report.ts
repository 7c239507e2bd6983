/**
 * The figures of the failover scenario (docs/reliability.md, Failover (Patroni)), counted per
 * delivery (message × endpoint) as the fault suite's are (faults/lib/report.ts).
 */
import type { LoadResult } from "./load.ts";
import type { SelfExit } from "./processes.ts";
import type { FaultReceiver } from "./receiver.ts";

export interface FailoverFacts {
  endpoints: number;
  load: LoadResult;
  receiver: FaultReceiver;
  selfExits: SelfExit[];
  /** when the primary's postmaster was SIGKILLed, and which node it was */
  killedAt: number;
  oldPrimary: string;
  /** when Patroni's REST API first named another node the leader (null: never) */
  promotedAt: number | null;
  newPrimary: string | null;
  /** when the old primary was back as the synchronous standby (null: not before the end) */
  rejoinedAt: number | null;
  loadEndedAt: number;
  settledAt: number | null;
}

export interface FailoverFigures {
  accepted: number;
  expected: number;
  delivered: number;
  lost: number;
  duplicated: number;
  unacknowledged: number;
  selfExits: number;
  api503: number;
  api503WithoutRetryAfter: number;
  api500: number;
  apiOtherErrors: number;
  givenUp: number;
  promotedMs: number | null;
  rejoinedMs: number | null;
  /** kill → first 202 to a request sent after the kill */
  first202Ms: number | null;
  /** kill → first delivery (2xx) of a message accepted after the kill */
  firstDeliveryMs: number | null;
  /** 202s answered to requests sent before the kill but answered after it */
  inFlightAccepted: number;
  drainMs: number | null;
  switch: string;
}

export function computeFailoverFigures(f: FailoverFacts): FailoverFigures {
  const { receiver, load } = f;
  const acceptedIds = new Set(load.accepted);
  let delivered = 0;
  let duplicated = 0;
  for (const id of acceptedIds) {
    for (let i = 0; i < f.endpoints; i++) {
      const n = receiver.delivered.get(`${id}|${i}`) ?? 0;
      if (n > 0) delivered++;
      if (n > 1) duplicated++;
    }
  }
  let unacknowledged = 0;
  for (const key of receiver.delivered.keys())
    if (!acceptedIds.has(key.slice(0, key.lastIndexOf("|")))) unacknowledged++;

  const after = load.acceptances.filter((a) => a.sentAt >= f.killedAt);
  const first202 = after.length > 0 ? Math.min(...after.map((a) => a.at)) : null;
  const afterIds = new Set(after.map((a) => a.id));
  let firstDelivery: number | null = null;
  for (const a of receiver.arrivals) {
    if (a.status === null || a.status >= 300 || a.at < f.killedAt) continue;
    if (!afterIds.has(a.key.slice(0, a.key.lastIndexOf("|")))) continue;
    firstDelivery = firstDelivery === null ? a.at : Math.min(firstDelivery, a.at);
  }
  const since = (t: number | null) => (t === null ? null : t - f.killedAt);
  return {
    accepted: acceptedIds.size,
    expected: acceptedIds.size * f.endpoints,
    delivered,
    lost: acceptedIds.size * f.endpoints - delivered,
    duplicated,
    unacknowledged,
    selfExits: f.selfExits.length,
    api503: load.answers503,
    api503WithoutRetryAfter: load.missingRetryAfter,
    api500: load.answers500,
    apiOtherErrors: load.otherErrors,
    givenUp: load.givenUp,
    promotedMs: since(f.promotedAt),
    rejoinedMs: since(f.rejoinedAt),
    first202Ms: since(first202),
    firstDeliveryMs: since(firstDelivery),
    inFlightAccepted: load.acceptances.filter((a) => a.sentAt < f.killedAt && a.at >= f.killedAt)
      .length,
    drainMs: f.settledAt === null ? null : Math.max(0, f.settledAt - f.loadEndedAt),
    switch: `${f.oldPrimary} -> ${f.newPrimary ?? "(none)"}`,
  };
}

const s = (ms: number | null) => (ms === null ? "-" : `${(ms / 1000).toFixed(1)} s`);

export function failoverTable(g: FailoverFigures): string {
  const rows: [string, string][] = [
    ["messages accepted (202)", String(g.accepted)],
    ["deliveries expected (message x endpoint)", String(g.expected)],
    ["deliveries arrived (2xx)", String(g.delivered)],
    ["LOST", String(g.lost)],
    ["duplicated (a delivery answered 2xx more than once)", String(g.duplicated)],
    ["delivered but never acknowledged", String(g.unacknowledged)],
    ["primary switch (Patroni)", g.switch],
    ["kill -> Patroni names the new leader", s(g.promotedMs)],
    ["kill -> old primary back as synchronous standby", s(g.rejoinedMs)],
    ["kill -> first 202 to a request sent after it", s(g.first202Ms)],
    ["kill -> first delivery of a message accepted after it", s(g.firstDeliveryMs)],
    ["202s to requests sent before the kill, answered after", String(g.inFlightAccepted)],
    [
      "API 503 answers (all with Retry-After?)",
      `${g.api503} (${g.api503WithoutRetryAfter === 0 ? "yes" : `${g.api503WithoutRetryAfter} without`})`,
    ],
    ["API 500 answers", String(g.api500)],
    ["API other errors / messages given up", `${g.apiOtherErrors} / ${g.givenUp}`],
    ["SELF-EXITS (api or worker exited on its own)", String(g.selfExits)],
    ["hookrelay processes restarted by the run", "0"],
    ["drain time after the load", s(g.drainMs)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n");
}
