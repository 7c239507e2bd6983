/**
 * GET /dashboard/endpoints?state=&slow=&app=&sort=&dir=&page=: every endpoint the
 * principal may see, filtered, sorted and paged in PostgreSQL (sql/endpoint-table.ts).
 * Every filter, sort and page is in the URL, so a view can be bookmarked and shared.
 */
import type { FastifyInstance } from "fastify";
import { resolveAppId } from "../../api/resolve.ts";
import { withFirstFigures } from "../../health/latency-stats.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { badge, count, ms, ownApp, percent, since } from "../format.ts";
import { dashboardPath, type Html, html, raw } from "../html.ts";
import { sendPage } from "../layout.ts";
import { ownKey } from "../query.ts";
import {
  ENDPOINT_SORTS,
  type EndpointSort,
  endpointTable,
  STATE_FILTERS,
  type StateFilter,
} from "../sql/endpoint-table.ts";

export const PAGE_SIZE = 50;

/**
 * With htmx, filters, sort links and pages replace the results in place (the rest of the
 * page stays) and the address bar follows, so every view keeps its URL. Without it they
 * are ordinary links and a GET form.
 */
const IN_PLACE = raw(
  'hx-target="#endpoint-results" hx-select="#endpoint-results" hx-swap="outerHTML" hx-push-url="true"',
);
/** Past this page the offset scan costs more than anyone reads (10,000 endpoints = 200). */
const MAX_PAGE = 10_000;

interface Query {
  state?: string;
  slow?: string;
  app?: string;
  sort?: string;
  dir?: string;
  page?: string;
}

const COLUMNS: { key: EndpointSort | null; label: string; num?: boolean; narrow?: boolean }[] = [
  { key: "app", label: "App" },
  { key: "url", label: "URL" },
  { key: "state", label: "State" },
  { key: "circuit", label: "Circuit" },
  { key: "success", label: "Success", num: true },
  { key: "p50", label: "p50", num: true, narrow: true },
  { key: "p95", label: "p95", num: true },
  { key: "p99", label: "p99", num: true, narrow: true },
  { key: "backlog", label: "Backlog", num: true },
  { key: "oldest", label: "Oldest pending", num: true, narrow: true },
];

export function registerEndpointListPage(
  app: FastifyInstance,
  { pool, redactor, config }: DashboardDeps,
): void {
  app.get<{ Querystring: Query }>(
    "/endpoints",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      const { principal } = session;
      const q = request.query;
      const sort: EndpointSort = ownKey(ENDPOINT_SORTS, q.sort) ?? "app";
      const descending = q.dir === "desc";
      const state = STATE_FILTERS.includes(q.state as StateFilter)
        ? (q.state as StateFilter)
        : null;
      const slow = q.slow === "1" || q.slow === "true" || q.slow === "on";
      const pageNo = Math.min(MAX_PAGE, Math.max(1, Number.parseInt(q.page ?? "1", 10) || 1));
      const appFilter = typeof q.app === "string" && q.app.trim() !== "" ? q.app.trim() : null;
      const appId = appFilter ? await resolveAppId(pool, principal, appFilter) : ownApp(principal);
      const table = await endpointTable(pool, {
        appId,
        state,
        slow,
        sort,
        descending,
        limit: PAGE_SIZE,
        offset: (pageNo - 1) * PAGE_SIZE,
      });
      // (sorted by the stored figures; a row awaiting its first shows them computed now)
      const rows = await withFirstFigures(pool, table.rows, config.health.windowMs);
      const total = table.total;
      const keep = {
        state,
        slow: slow ? 1 : null,
        app: appFilter,
        sort,
        dir: descending ? "desc" : null,
      };
      const sortLink = (key: EndpointSort) =>
        dashboardPath(["endpoints"], {
          ...keep,
          sort: key,
          dir: key === sort && !descending ? "desc" : null,
        });
      const header = (c: (typeof COLUMNS)[number]): Html => {
        const current = c.key === sort;
        const ariaSort = current ? (descending ? "descending" : "ascending") : "none";
        const arrow = current ? (descending ? " ▼" : " ▲") : "";
        return html`<th scope="col" class="${c.num ? "num" : ""}${c.narrow ? " hide-narrow" : ""}" aria-sort="${ariaSort}">${
          c.key ? html`<a href="${sortLink(c.key)}">${c.label}${arrow}</a>` : c.label
        }</th>`;
      };
      const first = total === 0 ? 0 : (pageNo - 1) * PAGE_SIZE + 1;
      const last = Math.min(total, pageNo * PAGE_SIZE);
      const pageLink = (n: number) => dashboardPath(["endpoints"], { ...keep, page: n });
      const stateLabel = (r: (typeof rows)[number]) =>
        r.disabled
          ? badge("disabled")
          : r.paused_until && r.paused_until.getTime() > Date.now()
            ? badge("warning", "paused")
            : badge("ok", "enabled");
      const body = html`<h1>Endpoints</h1>
<form class="filters" method="get" action="/dashboard/endpoints" role="search" aria-label="Filter endpoints"
  hx-get="/dashboard/endpoints" hx-trigger="change, submit" ${IN_PLACE}>
  <label>State
    <select name="state">
      <option value="">any</option>
      ${STATE_FILTERS.map(
        (s) =>
          html`<option value="${s}"${s === state ? html` selected` : ""}>${s.replace("_", " ")}</option>`,
      )}
    </select>
  </label>
  <label><span>Slow only</span><input type="checkbox" name="slow" value="1"${slow ? html` checked` : ""}></label>
  ${
    principal.role === "admin"
      ? html`<label>App (id or uid)<input name="app" value="${appFilter ?? ""}" maxlength="256"></label>`
      : ""
  }
  <input type="hidden" name="sort" value="${sort}">
  ${descending ? html`<input type="hidden" name="dir" value="desc">` : ""}
  <button type="submit">Apply</button>
</form>
<div id="endpoint-results">
<p class="muted" data-testid="range">${first}–${last} of ${count(total)} endpoints</p>
<div class="table-wrap"><table data-testid="endpoints">
<thead hx-boost="true" ${IN_PLACE}><tr>${COLUMNS.map(header)}</tr></thead>
<tbody>${rows.map(
        (r) => html`<tr>
  <td>${r.app_name}${r.app_uid ? html` <span class="muted">(${r.app_uid})</span>` : ""}</td>
  <td class="url"><a href="${dashboardPath(["endpoints", r.id])}">${redactor.url(r.url)}</a>${
    r.description ? html`<div class="muted">${r.description}</div>` : ""
  }</td>
  <td>${stateLabel(r)}</td>
  <td>${badge(r.circuit_state)}${r.slow ? html` ${badge("warning", "slow")}` : ""}</td>
  <td class="num">${percent(r.success_rate)}</td>
  <td class="num hide-narrow">${ms(r.p50_ms)}</td>
  <td class="num">${ms(r.p95_ms)}</td>
  <td class="num hide-narrow">${ms(r.p99_ms)}</td>
  <td class="num">${count(r.pending)}${r.dead_letter ? html` <span class="muted">(${count(r.dead_letter)} dead)</span>` : ""}</td>
  <td class="num hide-narrow">${since(r.oldest_pending_at)}</td>
</tr>`,
      )}</tbody></table></div>
<nav class="pager" aria-label="Pages" hx-boost="true" ${IN_PLACE}>
  ${pageNo > 1 ? html`<a href="${pageLink(pageNo - 1)}" rel="prev">← Previous</a>` : ""}
  <span>Page ${pageNo} of ${Math.max(1, Math.ceil(total / PAGE_SIZE))}</span>
  ${last < total ? html`<a href="${pageLink(pageNo + 1)}" rel="next">Next →</a>` : ""}
</nav>
</div>`;
      return sendPage(reply, {
        title: "Endpoints",
        principal,
        csrfToken: session.csrfToken,
        active: "/dashboard/endpoints",
        body,
      });
    },
  );
}
