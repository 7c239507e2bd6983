/**
 * GET /dashboard/dead-letters?endpoint_id=&status_code=&error_kind=&since=&iterator=&ranked=:
 * the dead-letter analysis per endpoint (pattern and suggested action; the 50 endpoints
 * with the most dead letters, `ranked` pages on) and the dead letters, both from the API
 * (GET /dead-letters/analysis, GET /dead-letters) with the same filters.
 * Requeue goes through the endpoint's confirmation page (pages/endpoint.ts), which states
 * how many rows and at what pace.
 *
 * The analysis reads every dead letter it ranks (their errors, status codes and times), so
 * it covers the deaths of a window, the latency window (HOOKRELAY_LATENCY_WINDOW_MS, 24 h
 * by default), unless `since` sets another start; the page says which. Over a month of
 * history the whole of it cost seconds (docs/history.md, "Queries and pruning"). The list
 * is not bounded: it pages newest first from an index, whatever the history holds.
 */
import type { FastifyInstance } from "fastify";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { badge, count, time, windowText } from "../format.ts";
import { dashboardPath, html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { clippedText } from "../payload-view.ts";
import { queryStrings } from "../query.ts";

const FILTERS = ["endpoint_id", "status_code", "error_kind", "since"] as const;

/** Endpoints in the analysis table at a time: a page, never every one of 10,000. */
const ANALYSIS_PAGE = 50;

export function registerDeadLetterPages(
  app: FastifyInstance,
  { calls, redactor, config }: DashboardDeps,
): void {
  app.get("/dead-letters", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const { principal } = session;
    const q = queryStrings(request.query);
    const filter = new URLSearchParams();
    for (const name of FILTERS) {
      const v = q[name]?.trim();
      if (v)
        filter.set(name, name === "since" && /^\d{4}-\d\d-\d\d$/.test(v) ? `${v}T00:00:00Z` : v);
    }
    const list = new URLSearchParams(filter);
    list.set("limit", "50");
    if (q.iterator) list.set("iterator", q.iterator);
    const ranked = new URLSearchParams(filter);
    ranked.set("limit", String(ANALYSIS_PAGE));
    // the analysis's window: the filter's start, else the latency window's
    const windowed = !filter.has("since");
    if (windowed) ranked.set("since", new Date(Date.now() - config.health.windowMs).toISOString());
    const died = windowed
      ? `deaths in the last ${windowText(config.health.windowMs)}`
      : `deaths since ${filter.get("since")}`;
    if (q.ranked && /^\d{1,9}$/.test(q.ranked)) ranked.set("iterator", q.ranked);
    const [analysis, dead] = await Promise.all([
      calls.read(principal, "/api/v1/dead-letters/analysis", {}, ranked),
      calls.read(principal, "/api/v1/dead-letters", {}, list),
    ]);
    const rows = analysis.data;
    const total = analysis.endpointTotal;
    const from = Number(ranked.get("iterator") ?? 0);
    const letters = dead.data;
    const kept = Object.fromEntries(FILTERS.map((f) => [f, q[f]]));
    const body = html`<h1>Dead letters</h1>
<form class="filters" method="get" action="/dashboard/dead-letters" role="search" aria-label="Filter dead letters">
  <label>Endpoint id<input name="endpoint_id" value="${q.endpoint_id ?? ""}" maxlength="256"></label>
  <label>Status code<input name="status_code" value="${q.status_code ?? ""}" inputmode="numeric" maxlength="3" size="4"></label>
  <label>Error kind<input name="error_kind" value="${q.error_kind ?? ""}" maxlength="64"></label>
  <label>Died since<input name="since" type="date" value="${q.since?.slice(0, 10) ?? ""}"></label>
  <button type="submit">Apply</button>
</form>
<section aria-labelledby="h-analysis"><h2 id="h-analysis">Analysis by endpoint</h2>
${
  rows.length === 0
    ? html`<p class="muted" data-testid="analysis-range">${total > 0 ? "No more endpoints." : `No dead letters match (${died}).`}</p>`
    : html`<p class="muted" data-testid="analysis-range">${
        total > rows.length
          ? `Endpoints ${count(from + 1)}–${count(from + rows.length)} of ${count(total)} with dead letters (${died}), most dead first.`
          : `${count(total)} ${total === 1 ? "endpoint" : "endpoints"} with dead letters (${died}), most dead first.`
      }</p><div class="table-wrap"><table data-testid="analysis">
<thead><tr><th>Endpoint</th><th class="num">Dead</th><th>Pattern</th><th>Suggested action</th><th class="hide-narrow">Most common</th><th class="hide-narrow">First – last</th><th></th></tr></thead>
<tbody>${rows.map(
        (a) => html`<tr>
  <td class="url"><a href="${dashboardPath(["endpoints", a.endpointId])}">${a.url}</a></td>
  <td class="num">${count(a.deadCount)}</td>
  <td>${badge("warning", String(a.pattern).replaceAll("_", " "))}</td>
  <td class="text">${a.suggestedAction}</td>
  <td class="hide-narrow text">${a.mostCommonStatusCode ?? "no status"}: ${clippedText(String(a.mostCommonError ?? ""))}</td>
  <td class="hide-narrow">${time(a.firstDeadAt)} – ${time(a.lastDeadAt)}</td>
  <td><a class="button" href="${dashboardPath(["endpoints", a.endpointId, "requeue"])}">Requeue…</a></td>
</tr>`,
      )}</tbody></table></div>`
}
<nav class="pager" aria-label="Endpoint pages">${
      from > 0
        ? html`<a href="${dashboardPath(["dead-letters"], { ...kept, ranked: from > ANALYSIS_PAGE ? String(from - ANALYSIS_PAGE) : undefined })}" rel="prev">← More dead</a>`
        : ""
    }${
      analysis.done
        ? ""
        : html`<a href="${dashboardPath(["dead-letters"], { ...kept, ranked: analysis.iterator })}" rel="next">Fewer dead →</a>`
    }</nav>
</section>
<section aria-labelledby="h-list"><h2 id="h-list">Dead letters</h2>
<p class="muted">Every dead letter the filters match, newest death first.</p>
<div class="table-wrap"><table data-testid="dead-letters">
<thead><tr><th>Died</th><th>Delivery</th><th>Message</th><th class="hide-narrow">Endpoint</th><th class="num">Attempts</th><th>Last status</th><th>Last error</th></tr></thead>
<tbody>${letters.map(
      (d) => html`<tr>
  <td>${time(d.deadAt)}</td>
  <td><code>${d.deliveryId}</code></td>
  <td><a href="${dashboardPath(["messages", d.messageId])}">${d.messageId}</a></td>
  <td class="url hide-narrow"><a href="${dashboardPath(["endpoints", d.endpointId])}">${d.url}</a></td>
  <td class="num">${d.attempts}</td>
  <td>${d.statusCode ?? d.errorKind ?? ""}</td>
  <td class="text">${d.error ? clippedText(redactor.text(String(d.error))) : ""}</td>
</tr>`,
    )}</tbody></table></div>
${letters.length === 0 ? html`<p class="muted">None.</p>` : ""}
<nav class="pager" aria-label="Pages">${
      dead.done
        ? ""
        : html`<a href="${dashboardPath(["dead-letters"], { ...kept, iterator: dead.iterator })}" rel="next">Older →</a>`
    }</nav>
</section>`;
    return sendPage(reply, {
      title: "Dead letters",
      principal,
      csrfToken: session.csrfToken,
      active: "/dashboard/dead-letters",
      body,
    });
  });
}
