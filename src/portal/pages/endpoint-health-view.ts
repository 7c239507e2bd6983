/**
 * The health section of a portal endpoint's page (docs/portal.md, "Pages"): figures of the
 * last 24 h as cards (each a label above its value) and the latency chart with its range
 * links (?hours=1, 6 or 24), read through GET /portal/endpoints/{ep}/chart-data.
 */
import type { EndpointHealthResponse } from "../../api/health-responses.ts";
import { bucketText, chartQuery, rangeLinksTo, rangeText } from "../../dashboard/chart-ranges.ts";
import { type Html, html } from "../../dashboard/html.ts";
import { portalPath } from "../layout.ts";
import { badge, ms, percent } from "../views.ts";

const card = (label: string, value: unknown) =>
  html`<div class="card"><div class="label">${label}</div><div class="value">${value}</div></div>`;

export function endpointHealthSection(
  endpointId: string,
  h: EndpointHealthResponse,
  hours: number,
  windowMs: number,
): Html {
  const page = (query: Record<string, string | number> = {}) =>
    portalPath(["endpoints", endpointId], query);
  const src = portalPath(["endpoints", endpointId, "chart-data"], chartQuery(hours));
  return html`<h2>Health (last 24 h)</h2>
<div class="cards" data-testid="health-cards">
${card("Success rate", percent(h.latency.successRate))}
${card("p50", ms(h.latency.p50Ms))}
${card("p95", ms(h.latency.p95Ms))}
${card("p99", ms(h.latency.p99Ms))}
${card("Attempts", h.latency.samples)}
${card("Circuit", html`<span data-circuit="${h.circuit.state}">${badge(h.circuit.state)}</span>`)}
${card("Pending", h.queue.pending)}
${card("Failed for good", h.queue.deadLetter)}
</div>
<h2 id="h-latency">Latency, ${rangeText(hours)}</h2>
${rangeLinksTo((n) => page({ hours: n }), hours, windowMs)}
<div class="charts"><figure class="chart"><h3>Latency p50 / p95 / p99 in ms, per ${bucketText(hours)}</h3>
<div data-chart="latency" data-src="${src}" role="img" aria-label="Latency percentiles of this endpoint in milliseconds, ${rangeText(hours)}"></div></figure></div>`;
}
