/**
 * The figures of a fault run, counted per delivery (message × endpoint): a message fanned
 * out to 10 endpoints arrives 10 times, and that is not a duplicate. See docs/reliability.md.
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

export interface Kill {
  at: number;
  pid: number;
}

export interface RunFacts {
  endpoints: number;
  load: LoadResult;
  receiver: FaultReceiver;
  kills: Kill[];
  selfExits: SelfExit[];
  churnEndedAt: number;
  /** when every accepted delivery had arrived (null: not within the settle time) */
  settledAt: number | null;
  pg: { stoppedAt: number; startedAt: number; healthz: string } | null;
}

export interface Figures extends DeliveryCounts, ApiAnswers {
  first503: number;
  cut: number;
  kills: number;
  selfExits: number;
  pgDownMs: number | null;
  healthzDuringOutage: string;
  /** time from the end of the churn until the last accepted delivery arrived */
  drainMs: number | null;
  /** kill → first redelivery of each delivery the killed worker held in flight */
  redelivery: {
    measured: number;
    medianMs: number | null;
    p95Ms: number | null;
    maxMs: number | null;
    never: number;
  };
}

const quantile = (sorted: number[], q: number): number | null =>
  sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

export function computeFigures(f: RunFacts): Figures {
  const { receiver, load } = f;

  // Each cut belongs to the last kill before it (only kills cut held requests: holds are
  // shorter than the timeout). Its redelivery is the next arrival of the same delivery.
  const arrivalsByKey = new Map<string, number[]>();
  for (const a of receiver.arrivals) {
    const list = arrivalsByKey.get(a.key) ?? [];
    list.push(a.at);
    arrivalsByKey.set(a.key, list);
  }
  const times: number[] = [];
  let never = 0;
  for (const cut of receiver.cuts) {
    const kill = [...f.kills].reverse().find((k) => k.at <= cut.at);
    if (!kill) continue;
    const again = arrivalsByKey.get(cut.key)?.find((at) => at > cut.at);
    if (again === undefined) never++;
    else times.push(again - kill.at);
  }
  times.sort((a, b) => a - b);

  return {
    ...countDeliveries(load, receiver, f.endpoints),
    first503: receiver.arrivals.filter((a) => a.status === 503).length,
    cut: receiver.cuts.length,
    kills: f.kills.length,
    selfExits: f.selfExits.length,
    ...apiAnswers(load),
    pgDownMs: f.pg ? f.pg.startedAt - f.pg.stoppedAt : null,
    healthzDuringOutage: f.pg?.healthz ?? "-",
    drainMs: f.settledAt === null ? null : Math.max(0, f.settledAt - f.churnEndedAt),
    redelivery: {
      measured: times.length,
      medianMs: quantile(times, 0.5),
      p95Ms: quantile(times, 0.95),
      maxMs: times.length > 0 ? times[times.length - 1]! : null,
      never,
    },
  };
}

/** The figures as an aligned two-column table. */
export function figuresTable(g: Figures): string {
  return alignedTable([
    ...deliveryRows(g),
    ["first attempts answered 503 by the receiver", String(g.first503)],
    ["requests cut in flight by a kill", String(g.cut)],
    ["worker SIGKILLs", String(g.kills)],
    ["SELF-EXITS (api or worker exited on its own)", String(g.selfExits)],
    ["PostgreSQL down", seconds(g.pgDownMs)],
    ["/healthz during the outage", g.healthzDuringOutage],
    ...apiRows(g),
    ["drain time after the churn", seconds(g.drainMs)],
    ["crash-to-redelivery: measured deliveries", String(g.redelivery.measured)],
    ["crash-to-redelivery: median", seconds(g.redelivery.medianMs)],
    ["crash-to-redelivery: p95", seconds(g.redelivery.p95Ms)],
    ["crash-to-redelivery: max", seconds(g.redelivery.maxMs)],
    ["cut deliveries never sent again", String(g.redelivery.never)],
  ]);
}

/**
 * A timeline for --details, in seconds after the first kill: each kill, each cut request
 * with every arrival of its delivery (time:status, null = cut), and the first duplicates.
 */
export function detailsText(f: RunFacts, maxLines = 30): string {
  const t0 = f.kills[0]?.at ?? f.churnEndedAt;
  const rel = (t: number) => ((t - t0) / 1000).toFixed(2);
  const arrivalsOf = (key: string) =>
    f.receiver.arrivals
      .filter((a) => a.key === key)
      .map((a) => `${rel(a.at)}:${a.status}`)
      .join(" ");
  const lines = [`kills at ${f.kills.map((k) => rel(k.at)).join(" ")}`];
  for (const c of f.receiver.cuts.slice(0, maxLines))
    lines.push(`cut at ${rel(c.at)} ${c.key}: ${arrivalsOf(c.key)}`);
  let shown = 0;
  for (const [key, n] of f.receiver.delivered) {
    if (n < 2) continue;
    if (shown++ >= maxLines) break;
    lines.push(`duplicate ${key}: ${arrivalsOf(key)}`);
  }
  return lines.join("\n");
}
