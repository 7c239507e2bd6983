/**
 * The figures of the failover scenario (docs/reliability.md, Failover (Patroni)), counted per
 * delivery (message × endpoint) as the fault suite's are (faults/lib/report.ts).
 */
import type { LoadResult } from "./load.ts";
import type { SelfExit } from "./processes.ts";
import type { FaultReceiver } from "./receiver.ts";
import {
  type ApiAnswers,
  alignedTable,
  apiAnswers,
  apiRows,
  countDeliveries,
  type DeliveryCounts,
  deliveryRows,
  seconds,
} from "./report-parts.ts";

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

export interface FailoverFigures extends DeliveryCounts, ApiAnswers {
  selfExits: number;
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
    ...countDeliveries(load, receiver, f.endpoints),
    selfExits: f.selfExits.length,
    ...apiAnswers(load),
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

export function failoverTable(g: FailoverFigures): string {
  return alignedTable([
    ...deliveryRows(g),
    ["primary switch (Patroni)", g.switch],
    ["kill -> Patroni names the new leader", seconds(g.promotedMs)],
    ["kill -> old primary back as synchronous standby", seconds(g.rejoinedMs)],
    ["kill -> first 202 to a request sent after it", seconds(g.first202Ms)],
    ["kill -> first delivery of a message accepted after it", seconds(g.firstDeliveryMs)],
    ["202s to requests sent before the kill, answered after", String(g.inFlightAccepted)],
    ...apiRows(g),
    ["SELF-EXITS (api or worker exited on its own)", String(g.selfExits)],
    ["hookrelay processes restarted by the run", "0"],
    ["drain time after the load", seconds(g.drainMs)],
  ]);
}
