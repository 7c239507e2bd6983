// hookrelay dashboard charts: every element with data-chart="<kind>" and data-src="<url>"
// gets a uPlot chart of the time buckets that URL answers (GET /api/v1/stats/buckets,
// read through /dashboard/chart-data). After drawing, the element carries data-points (the
// number of buckets with data), which the browser tests read. Charts of one URL share one
// fetch, and an element is drawn once: an htmx swap (the summary's refresh every 30 s)
// draws only the new charts inside what it swapped in, so plots and resize observers do
// not pile up.
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
    const minutes = body.bucketSeconds / 60;
    const rows = body.data;
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
    const points = rows.filter((r) => series.some((s) => r[s.key])).length;
    el.textContent = "";
    const plot = new uPlot(
      {
        width: widthOf(el),
        height: 220,
        series: [
          {},
          ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 1.5, spanGaps: false })),
        ],
        axes: [{}, { size: 60 }],
        scales: { x: { time: true } },
      },
      [xs, ...ys],
      el,
    );
    el.setAttribute("data-points", String(points));
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
