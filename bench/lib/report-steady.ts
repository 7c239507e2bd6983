/** The figures of scenarios 19 (steady state) and 20 (soak), for bench/lib/report.ts. */
import { purgeTimeRatios } from "../scenarios/history.ts";
import type { SoakRun } from "../scenarios/soak.ts";
import type { SteadyRun } from "../scenarios/steady.ts";
import { ratio } from "./stats.ts";

type Target = { text: string; ok: (v: number) => boolean };
type Add = (
  scenario: string,
  figure: string,
  unit: string,
  pick: (r: { steady?: SteadyRun; soak?: SoakRun }) => number | undefined,
  target?: Target,
) => void;

const atLeast = (x: number): Target => ({ text: `>= ${x}`, ok: (v) => v >= x });
const atMost = (x: number, text = `<= ${x}`): Target => ({ text, ok: (v) => v <= x });

/** Scenario 11's pages, in its order. */
export const DASHBOARD_PAGES = [
  "overview",
  "endpoints",
  "endpoints by p95",
  "endpoints by backlog",
  "endpoints, page 150",
  "endpoint detail",
  "dead letters",
  "message lookup",
];

export function steadyFigures(add: Add): void {
  const S = "19 steady";
  const both = (
    figure: string,
    unit: string,
    pick: (s: SteadyRun["empty"]) => number,
    target?: Target,
  ) => {
    add(S, `${figure}, empty`, unit, (r) => (r.steady ? pick(r.steady.empty) : undefined));
    add(S, `${figure}, full`, unit, (r) => (r.steady ? pick(r.steady.full) : undefined));
    add(
      S,
      `${figure}: full / empty`,
      "x",
      (r) => (r.steady ? ratio(pick(r.steady.full), pick(r.steady.empty)) : undefined),
      target,
    );
  };
  add(S, "history seeded (rows, indexes, vacuum)", "s", (r) => r.steady?.seedSeconds);
  both("delivery, 1 worker", "/s", (s) => s.delivery.rate, atLeast(0.9));
  both("ingest", "/s", (s) => s.ingest?.rate ?? Number.NaN, atLeast(0.9));
  // the two sides' claims timed claim by claim in turn (bench/scenarios/steady.ts)
  both("claim 500 rows", "ms", (s) => s.delivery.claimMs, atMost(1.5));
  both("WAL per delivery", "B", (s) => s.delivery.walPerDelivery);
  add(S, "of which retention's statements, full", "B", (r) =>
    r.steady ? r.steady.full.delivery.retentionWalPerDelivery : undefined,
  );
  add(S, "PG CPU ms / 1k deliveries, full", "ms", (r) =>
    r.steady ? r.steady.full.delivery.cpuPerThousand.ms.postgres : undefined,
  );
  add(S, "retention during delivery", "ms", (r) => r.steady?.retention.ms);
  add(S, "retention: partitions dropped", "n", (r) =>
    r.steady ? r.steady.retention.droppedPartitions.length : undefined,
  );
  for (const what of ["attempts", "messages", "dead_letters"]) {
    add(S, `retention: ${what} deleted row by row`, "n", (r) =>
      r.steady ? (r.steady.retention.deleted[what] ?? 0) : undefined,
    );
  }
  for (const page of DASHBOARD_PAGES) {
    add(
      S,
      `browser, full: ${page}`,
      "ms",
      (r) => r.steady?.full.dashboard?.browser?.[page],
      atMost(1000, "< 1000"),
    );
    add(S, `server, full: ${page}`, "ms", (r) => r.steady?.full.dashboard?.server[page]);
  }
  const per =
    (pick: (p: SteadyRun["purge"]) => number, scale: number) => (r: { steady?: SteadyRun }) =>
      r.steady ? (pick(r.steady.purge) * scale) / Math.max(1, r.steady.purge.rows) : undefined;
  add(S, "purge a day: rows", "n", (r) => r.steady?.purge.rows);
  add(
    S,
    "drop: ms / 1M rows",
    "ms",
    per((p) => p.drop.ms, 1e6),
  );
  add(
    S,
    "drop: the filesystem freeing its bytes, ms / 1M rows",
    "ms",
    per((p) => p.drop.fsFreeMs ?? 0, 1e6),
  );
  add(
    S,
    "DELETE + VACUUM: ms / 1M rows",
    "ms",
    per((p) => p.delete.ms + p.vacuum.ms, 1e6),
  );
  add(
    S,
    "drop: PG CPU ms / 1M rows (>= 1 tick)",
    "ms",
    per((p) => Math.max(10, p.drop.cpuMs), 1e6),
  );
  add(
    S,
    "DELETE + VACUUM: PG CPU ms / 1M rows",
    "ms",
    per((p) => p.delete.cpuMs + p.vacuum.cpuMs, 1e6),
  );
  add(
    S,
    "purge PG CPU: DELETE + VACUUM / drop",
    "x",
    (r) =>
      r.steady
        ? (r.steady.purge.delete.cpuMs + r.steady.purge.vacuum.cpuMs) /
          Math.max(10, r.steady.purge.drop.cpuMs)
        : undefined,
    atLeast(100),
  );
  add(
    S,
    "purge time: DELETE + VACUUM / drop",
    "x",
    (r) =>
      r.steady
        ? purgeTimeRatios(r.steady.purge.drop, r.steady.purge.delete, r.steady.purge.vacuum)
            .timeRatio
        : undefined,
    atLeast(100),
  );
  add(
    S,
    "purge time: DELETE + VACUUM / drop less the filesystem's freeing",
    "x",
    (r) =>
      r.steady
        ? purgeTimeRatios(r.steady.purge.drop, r.steady.purge.delete, r.steady.purge.vacuum)
            .timeRatioPg
        : undefined,
    atLeast(100),
  );
  for (const table of ["messages", "deliveries", "attempts"]) {
    add(S, `MB per day: ${table}, table`, "MB", (r) =>
      r.steady ? (r.steady.bytesPerDay[table]?.table ?? 0) / 1_048_576 : undefined,
    );
    add(S, `MB per day: ${table}, indexes`, "MB", (r) =>
      r.steady ? (r.steady.bytesPerDay[table]?.indexes ?? 0) / 1_048_576 : undefined,
    );
  }

  const W = "20 soak";
  add(W, "offered", "/s", (r) => r.soak?.offeredRate);
  add(W, "samples", "n", (r) => r.soak?.samples.length);
  add(W, "attempt partitions created meanwhile", "n", (r) => r.soak?.partitionsCreated.length);
  add(W, "attempt partitions dropped meanwhile", "n", (r) => r.soak?.partitionsDropped.length);
  for (const what of [
    "deliveries/s",
    "worker RSS MiB",
    "API RSS MiB",
    "history tables MiB",
    "attempts MiB",
    "dead tuples",
    "dead tuples past autovacuum's trigger",
  ]) {
    const v = (r: { soak?: SoakRun }) => r.soak?.verdicts.find((x) => x.what === what);
    add(W, `${what}: 1st half`, "n", (r) => v(r)?.firstHalf);
    add(W, `${what}: 2nd half`, "n", (r) => v(r)?.secondHalf);
    add(W, `${what}: flat (1 = yes)`, "n", (r) => (v(r) ? (v(r)!.flat ? 1 : 0) : undefined), {
      text: "1",
      ok: (x) => x === 1,
    });
  }
}
