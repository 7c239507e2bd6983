/**
 * GET /dashboard: the overview (docs/dashboard.md, "Pages"): the health summary with the
 * oldest pending first, open alerts, attempts per minute by outcome and latency
 * percentiles over 24 h, and the slowest and most failing endpoints.
 */
import type { FastifyInstance } from "fastify";
import type { AlertsResponse, HealthSummaryResponse } from "../../api/health-responses.ts";
import { bucketText, chartHours, chartQuery, rangeLinksTo, rangeText } from "../chart-ranges.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { age, badge, count, ms, ownApp, percent } from "../format.ts";
import { dashboardPath, type Html, html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { type EndpointTableRow, endpointTable } from "../sql/endpoint-table.ts";

/** Links to the other ranges of the same page. */
export function rangeLinks(path: readonly string[], hours: number, windowMs: number): Html {
  return rangeLinksTo((h) => dashboardPath(path, { hours: h }), hours, windowMs);
}

/** The chart source URL of a scope and range. */
export const chartSrc = (hours: number, query: Record<string, string> = {}) =>
  dashboardPath(["chart-data"], { ...chartQuery(hours), ...query });

/** The chart panels of one scope (the overview's: everything the principal sees). */
export function chartPanels(hours: number): Html {
  const src = chartSrc(hours);
  const per = bucketText(hours);
  return html`<div class="charts">
  <figure class="chart"><h3>Attempts per minute by outcome (${rangeText(hours)})</h3>
    <div data-chart="outcomes" data-src="${src}" role="img" aria-label="Attempts per minute by outcome, ${rangeText(hours)}"></div></figure>
  <figure class="chart"><h3>Attempt latency p50 / p95 / p99 in ms, per ${per} (${rangeText(hours)})</h3>
    <div data-chart="latency" data-src="${src}" role="img" aria-label="Attempt latency percentiles in milliseconds, ${rangeText(hours)}"></div></figure>
</div>`;
}

/** The health cards; with htmx they refresh themselves every 30 s from the same page. */
function summaryCards(s: HealthSummaryResponse, refresh: string): Html {
  const card = (label: string, value: unknown, lead = false) =>
    html`<div class="card${lead ? " lead" : ""}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
  return html`<div class="cards" id="summary" data-testid="summary" hx-get="${refresh}" hx-trigger="every 30s" hx-select="#summary" hx-swap="outerHTML">
  ${card("Oldest pending", s.oldestPending ? age(s.oldestPending.ageMs) : "none", true)}
  ${card("Pending", count(s.pending))}
  ${card("Awaiting retry", count(s.awaitingRetry))}
  ${card("In flight", count(s.inFlight))}
  ${card("Dead letters", count(s.deadLetter))}
  ${card("Delivered, last hour", count(s.deliveredLastHour))}
  ${card("Failed, last hour", count(s.failedLastHour))}
  ${card("Avg delivery, last hour", ms(s.avgDeliveryMsLastHour))}
</div>`;
}

function alertList(alerts: AlertsResponse["data"]): Html {
  if (alerts.length === 0) return html`<p class="muted">No open alerts.</p>`;
  return html`<ul class="alerts">${alerts.map(
    (a) => html`<li>${badge(a.severity)} <strong>${a.kind.replaceAll("_", " ")}</strong>
      ${
        a.subject.type === "endpoint"
          ? html`<a href="${dashboardPath(["endpoints", a.subject.id])}">${a.subject.id}</a>`
          : ""
      }: ${a.message} <span class="muted">since ${a.since}</span></li>`,
  )}</ul>`;
}

/** A short table of endpoints (top slow, top failing). */
export function shortEndpointTable(rows: EndpointTableRow[], maskUrl: (u: string) => string): Html {
  if (rows.length === 0) return html`<p class="muted">None.</p>`;
  return html`<div class="table-wrap"><table>
<thead><tr><th>Endpoint</th><th class="hide-narrow">App</th><th>Circuit</th><th class="num">Success</th><th class="num">p95</th><th class="num">Backlog</th></tr></thead>
<tbody>${rows.map(
    (r) => html`<tr>
  <td class="url"><a href="${dashboardPath(["endpoints", r.id])}">${maskUrl(r.url)}</a></td>
  <td class="hide-narrow">${r.app_name}</td>
  <td>${badge(r.circuit_state)}</td>
  <td class="num">${percent(r.success_rate)}</td>
  <td class="num">${ms(r.p95_ms)}</td>
  <td class="num">${count(r.pending)}</td>
</tr>`,
  )}</tbody></table></div>`;
}

export function registerOverviewPage(
  app: FastifyInstance,
  { calls, pool, redactor, config }: DashboardDeps,
): void {
  const windowMs = config.health.windowMs;
  app.get("/", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const { principal } = session;
    const appId = ownApp(principal);
    const hours = chartHours(request.query, windowMs);
    const top = { appId, state: null, slow: false, limit: 5, offset: 0 } as const;
    const [summary, alerts, slow, failing] = await Promise.all([
      calls.read(principal, "/api/v1/health/summary", {}),
      calls.read(principal, "/api/v1/alerts", {}),
      endpointTable(pool, { ...top, sort: "p95", descending: true }),
      endpointTable(pool, { ...top, sort: "success", descending: false }),
    ]);
    const maskUrl = (u: string) => redactor.url(u);
    return sendPage(reply, {
      title: "Overview",
      principal,
      csrfToken: session.csrfToken,
      active: "/dashboard",
      charts: true,
      body: html`<h1>Overview</h1>
<section aria-labelledby="h-summary"><h2 id="h-summary">Health</h2>${summaryCards(summary, dashboardPath([], { hours }))}</section>
<section aria-labelledby="h-alerts"><h2 id="h-alerts">Open alerts</h2>${alertList(alerts.data)}</section>
<section aria-labelledby="h-charts"><h2 id="h-charts">${rangeText(hours).replace("l", "L")}</h2>${rangeLinks([], hours, windowMs)}${chartPanels(hours)}</section>
<section aria-labelledby="h-slow"><h2 id="h-slow">Slowest endpoints (p95)</h2>${shortEndpointTable(
        slow.rows.filter((r) => r.p95_ms !== null),
        maskUrl,
      )}</section>
<section aria-labelledby="h-failing"><h2 id="h-failing">Most failing endpoints</h2>${shortEndpointTable(
        failing.rows.filter((r) => r.success_rate !== null && r.success_rate < 1),
        maskUrl,
      )}</section>
`,
    });
  });
}
