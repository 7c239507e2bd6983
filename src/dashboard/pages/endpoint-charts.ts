/**
 * The charts section of an endpoint's dashboard page (docs/dashboard.md, "Charts"): the
 * range links, latency p50/p95/p99 in ms and attempts by status class, per bucket.
 */
import { bucketText, rangeText } from "../chart-ranges.ts";
import { type Html, html } from "../html.ts";
import { chartSrc, rangeLinks } from "./overview.ts";

export function endpointChartsSection(endpointId: string, hours: number, windowMs: number): Html {
  const src = chartSrc(hours, { endpoint_id: endpointId });
  const per = bucketText(hours);
  return html`<section aria-labelledby="h-charts"><h2 id="h-charts">${rangeText(hours).replace("l", "L")}</h2>
${rangeLinks(["endpoints", endpointId], hours, windowMs)}
<div class="charts">
  <figure class="chart"><h3>Latency p50 / p95 / p99 in ms, per ${per}</h3>
    <div data-chart="latency" data-src="${src}" role="img" aria-label="Latency percentiles of this endpoint in milliseconds, ${rangeText(hours)}"></div></figure>
  <figure class="chart"><h3>Attempts by status class, per ${per}</h3>
    <div data-chart="status" data-src="${src}" role="img" aria-label="Attempts of this endpoint by status class, ${rangeText(hours)}"></div></figure>
</div></section>`;
}
