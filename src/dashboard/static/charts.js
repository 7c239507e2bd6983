// hookrelay dashboard charts: every element with data-chart="<kind>" and data-src="<url>"
// gets a uPlot chart of the time buckets that URL answers (GET /api/v1/stats/buckets,
// read through /dashboard/chart-data or the portal's chart-data). After drawing, the
// element carries data-points (the number of buckets with data), which the browser tests
// read. Charts of one URL share one fetch, and an element is drawn once: an htmx swap (the
// summary's refresh every 30 s) draws only the new charts inside what it swapped in, so
// plots and resize observers do not pile up.
//
// What happened stays visible at any range (docs/dashboard.md, "Charts"):
// - a range with no attempt at all says so in words (data-state="empty"), no empty axes;
// - when the data covers less than a quarter of the range, the time axis starts just
//   before the first bucket with data (30 minutes shown at least) and a note says so, so a
//   few minutes of traffic are not a sliver at the right edge of a day;
// - a bucket with data between empty ones (no line to draw) gets a point marker;
// - the y axis carries the unit (ms, attempts / min, attempts).
(() => {
  const SERIES = {
    outcomes: [
      { key: "success", label: "success /min", stroke: "#2e7d32", perMinute: true },
      { key: "failure", label: "failure /min", stroke: "#c62828", perMinute: true },
    ],
    latency: [
      { key: "p50Ms", label: "p50 ms", stroke: "#1565c0" },
      { key: "p95Ms", label: "p95 ms", stroke: "#ef6c00" },
      { key: "p99Ms", label: "p99 ms", stroke: "#6a1b9a" },
    ],
    status: [
      { key: "s2xx", label: "2xx", stroke: "#2e7d32" },
      { key: "s3xx", label: "3xx", stroke: "#00838f" },
      { key: "s4xx", label: "4xx", stroke: "#ef6c00" },
      { key: "s5xx", label: "5xx", stroke: "#c62828" },
      { key: "error", label: "no response", stroke: "#616161" },
    ],
  };
  /** the y axis's unit by chart kind */
  const UNITS = { outcomes: "attempts / min", latency: "ms", status: "attempts per bucket" };
  /** the least time the axis shows when it starts at the first data */
  const MIN_SHOWN_MS = 30 * 60_000;

  const widthOf = (el) => Math.max(280, el.clientWidth || 600);
  /** the elements drawn (or being drawn) */
  const drawn = new WeakSet();

  const fetchBuckets = async (src) => {
    const res = await fetch(src, {
      credentials: "same-origin",
      headers: { accept: "application/json" },
    });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    return res.json();
  };

  const hhmm = (ms) => new Date(ms).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  const rangeWords = (ms) => {
    const hours = Math.round(ms / 3_600_000);
    return hours <= 1 ? "the last hour" : `the last ${hours} hours`;
  };

  /** The first row to show: just before the first data, when the data is a small part. */
  function firstShown(rows, bucketMs, rangeMs) {
    const first = rows.findIndex((r) => r.attempts > 0);
    if (first <= 0) return 0;
    const end = Date.parse(rows[rows.length - 1].t) + bucketMs;
    if (end - Date.parse(rows[first].t) >= rangeMs / 4) return 0;
    const atLeast = rows.length - Math.ceil(MIN_SHOWN_MS / bucketMs);
    return Math.max(0, Math.min(first - 1, atLeast));
  }

  /** Indexes of values with no neighbour on either side: no line reaches them. */
  const isolated = (ys) =>
    ys.flatMap((v, i) => (v !== null && ys[i - 1] == null && ys[i + 1] == null ? [i] : []));

  const note = (el, text) => {
    const p = document.createElement("p");
    p.className = "chart-note muted";
    p.textContent = text;
    el.append(p);
  };

  async function draw(el, bucketsOf) {
    const kind = el.getAttribute("data-chart");
    const series = SERIES[kind];
    const src = el.getAttribute("data-src");
    if (!series || !src) return;
    drawn.add(el);
    el.setAttribute("data-state", "loading");
    let body;
    try {
      body = await bucketsOf(src);
    } catch (err) {
      el.setAttribute("data-state", "error");
      el.textContent = `Chart data could not be loaded (${err.message}).`;
      return;
    }
    const bucketMs = body.bucketSeconds * 1000;
    const rangeMs = Date.parse(body.until) - Date.parse(body.since);
    const all = body.data;
    const points = all.filter((r) => series.some((s) => r[s.key])).length;
    el.setAttribute("data-points", String(points));
    el.textContent = "";
    if (!all.some((r) => r.attempts > 0)) {
      el.setAttribute("data-state", "empty");
      note(el, `No attempts in ${rangeWords(rangeMs)}: nothing to draw yet.`);
      return;
    }
    const from = firstShown(all, bucketMs, rangeMs);
    const rows = all.slice(from);
    const minutes = body.bucketSeconds / 60;
    const xs = rows.map((r) => Date.parse(r.t) / 1000);
    const ys = series.map((s) =>
      rows.map((r) =>
        r[s.key] === null || r[s.key] === undefined
          ? null
          : s.perMinute
            ? r[s.key] / minutes
            : r[s.key],
      ),
    );
    const lone = ys.map(isolated);
    const unit = UNITS[kind];
    const plot = new uPlot(
      {
        width: widthOf(el),
        height: 220,
        series: [
          {},
          ...series.map((s, i) => ({
            label: s.label,
            stroke: s.stroke,
            width: 1.5,
            spanGaps: false,
            // uPlot shows points when buckets are far apart; a lone bucket gets one anyway
            points: { size: 7, fill: s.stroke, filter: (_u, _si, show) => (show ? null : lone[i]) },
          })),
        ],
        axes: [{}, { size: 70, label: unit, labelSize: 18 }],
        scales: { x: { time: true } },
      },
      [xs, ...ys],
      el,
    );
    if (from > 0) {
      el.setAttribute("data-from", rows[0].t);
      note(
        el,
        `Shown from ${hhmm(Date.parse(rows[0].t))}, just before the first attempt in ${rangeWords(rangeMs)}.`,
      );
    }
    el.setAttribute("data-state", "drawn");
    new ResizeObserver(() => plot.setSize({ width: widthOf(el), height: 220 })).observe(el);
  }

  /** Draws the charts under `root` not drawn yet, one fetch per URL. */
  const start = (root) => {
    const scope = root instanceof Element ? root : document;
    const charts = [...scope.querySelectorAll("[data-chart]")];
    if (scope instanceof Element && scope.matches("[data-chart]")) charts.push(scope);
    const fetches = new Map();
    const bucketsOf = (src) => {
      if (!fetches.has(src)) fetches.set(src, fetchBuckets(src));
      return fetches.get(src);
    };
    for (const el of charts) if (!drawn.has(el)) draw(el, bucketsOf);
  };
  if (document.readyState === "loading")
    document.addEventListener("DOMContentLoaded", () => start());
  else start();
  document.addEventListener("htmx:afterSettle", (event) => start(event.target));
})();
