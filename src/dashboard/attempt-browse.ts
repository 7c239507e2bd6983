/**
 * The attempt list's pieces that the dashboard and the portal share (docs/browse.md): an
 * endpoint's attempts, newest first, through the API's GET /app/{app}/attempt/endpoint/{ep}
 * and its iterator, filtered by result, response status class, event types, channel and
 * time. What the API refuses comes back in its own words (message-browse.ts's `refused`).
 */
import type { FastifyReply } from "fastify";
import type { Principal } from "../api/auth.ts";
import { notFound } from "../api/errors.ts";
import { answerError, type InProcessCalls } from "../api/in-process.ts";
import { ms, time } from "./format.ts";
import { type Html, html } from "./html.ts";
import { refused, sendExport, shortLabel } from "./message-browse.ts";
import { queryStrings } from "./query.ts";

/** The filters as typed ("" is none). */
export interface AttemptFilters {
  endpoint: string;
  result: string;
  codeClass: string;
  eventTypes: string;
  channel: string;
  after: string;
  before: string;
}

const NAMES = {
  endpoint: "endpoint",
  result: "result",
  codeClass: "status_code_class",
  eventTypes: "event_types",
  channel: "channel",
  after: "after",
  before: "before",
} as const satisfies Record<keyof AttemptFilters, string>;

/** Svix's attempt status numbers by the words the form shows. */
const RESULTS: Record<string, string> = { success: "0", fail: "2" };
const CODE_CLASSES = ["0", "100", "200", "300", "400", "500"] as const;

export function attemptFiltersOf(query: unknown): AttemptFilters {
  const q = queryStrings(query);
  const out = {} as AttemptFilters;
  for (const [k, name] of Object.entries(NAMES))
    out[k as keyof AttemptFilters] = (q[name] ?? "").trim().slice(0, 256);
  return out;
}

export function attemptFilterParams(f: AttemptFilters): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, name] of Object.entries(NAMES)) out[name] = f[k as keyof AttemptFilters];
  return out;
}

function utc(t: string): string {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d)(:\d\d(\.\d+)?)?$/.exec(t);
  return m ? `${m[1]}${m[2] ?? ":00"}Z` : t;
}

/** The API's query for the filters (the endpoint is the path's). */
export function attemptApiQuery(f: AttemptFilters): URLSearchParams {
  const q = new URLSearchParams();
  // an unknown result word goes as typed, for the API to refuse in its own words
  if (f.result) q.set("status", RESULTS[f.result] ?? f.result);
  if (f.codeClass) q.set("status_code_class", f.codeClass);
  for (const t of f.eventTypes.split(/[\s,]+/).filter(Boolean)) q.append("event_types", t);
  if (f.channel) q.set("channel", f.channel);
  if (f.after) q.set("after", utc(f.after));
  if (f.before) q.set("before", utc(f.before));
  return q;
}

export function attemptFilterForm(o: {
  action: string;
  filters: AttemptFilters;
  endpoints: readonly { id: string; label: string }[];
  lead?: Html;
}): Html {
  const f = o.filters;
  const option = (value: string, label: string, current: string) =>
    html`<option value="${value}"${value === current ? html` selected` : ""}>${label}</option>`;
  return html`<form class="filters" method="get" action="${o.action}" role="search" aria-label="Filter attempts" data-testid="attempt-filters">
${o.lead ?? ""}
<label>Endpoint<select name="endpoint" required>${o.endpoints.map((e) => option(e.id, shortLabel(e.label), f.endpoint))}</select></label>
<label>Result<select name="result">${option("", "any", f.result)}${option("success", "success", f.result)}${option("fail", "fail", f.result)}</select></label>
<label>Response<select name="status_code_class">${option("", "any", f.codeClass)}${CODE_CLASSES.map((c) => option(c, c === "0" ? "none" : `${c[0]}xx`, f.codeClass))}</select></label>
<label>Event types<input name="event_types" value="${f.eventTypes}" maxlength="256"></label>
<label>Channel<input name="channel" value="${f.channel}" maxlength="256"></label>
<label>After (UTC)<input type="datetime-local" step="1" name="after" value="${f.after}"></label>
<label>Before (UTC)<input type="datetime-local" step="1" name="before" value="${f.before}"></label>
<button type="submit">Filter</button>
</form>`;
}

/** An attempt as the API lists it. */
export interface ListedAttempt {
  msgId: string;
  timestamp: string;
  statusText: string;
  responseStatusCode: number;
  responseDurationMs: number;
  attemptNumber: number;
  errorKind?: string | null;
}

/** The table of a page of attempts, with its status column. */
export function attemptTable(
  rows: readonly ListedAttempt[],
  linkOf: (msgId: string) => string,
): Html {
  if (rows.length === 0) return html`<p class="muted" role="status">No attempt matches.</p>`;
  return html`<div class="table-wrap"><table data-testid="attempt-list">
<thead><tr><th>Time</th><th>Status</th><th>Response</th><th>Message</th><th class="hide-narrow">Attempt</th><th class="num hide-narrow">Latency</th></tr></thead>
<tbody>${rows.map(
    (a) => html`<tr>
<td>${time(a.timestamp)}</td>
<td data-testid="attempt-status"><span class="badge ${a.statusText === "success" ? "delivered" : "failed"}">${a.statusText}</span></td>
<td>${a.responseStatusCode ? `HTTP ${a.responseStatusCode}` : (a.errorKind ?? "no response")}</td>
<td><a href="${linkOf(a.msgId)}"><code>${a.msgId}</code></a></td>
<td class="hide-narrow">#${a.attemptNumber}</td>
<td class="num hide-narrow">${ms(a.responseDurationMs)}</td>
</tr>`,
  )}</tbody></table></div>`;
}

/**
 * The attempt list's content for an app: the form, then a page of the chosen endpoint's
 * attempts (the first endpoint when none is chosen) and the pager, or the API's reason
 * for refusing the filters with its status.
 */
export async function attemptListContent(o: {
  calls: InProcessCalls;
  principal: Principal;
  appId: string;
  query: unknown;
  action: string;
  lead?: Html;
  /** the page's own URL with these query values */
  pathOf: (query: Record<string, string>) => string;
  messageLink: (msgId: string) => string;
  /** the page's export of the list as filtered */
  exportOf: (query: Record<string, string>) => string;
}): Promise<{ status: number; body: Html }> {
  const q = queryStrings(o.query);
  const filters = attemptFiltersOf(o.query);
  const app = encodeURIComponent(o.appId);
  const eps = await o.calls.call(o.principal, "GET", `/api/v1/app/${app}/endpoint?limit=250`);
  if (eps.status >= 400) throw answerError(eps);
  const endpoints = (eps.body.data as { id: string; url: string }[]).map((e) => ({
    id: e.id,
    label: e.url,
  }));
  filters.endpoint ||= endpoints[0]?.id ?? "";
  const form = attemptFilterForm({ action: o.action, filters, endpoints, lead: o.lead });
  if (!filters.endpoint)
    return { status: 200, body: html`${form}<p class="muted">No endpoint yet.</p>` };
  const apiQuery = attemptApiQuery(filters);
  apiQuery.set("limit", "50");
  if (q.iterator) apiQuery.set("iterator", q.iterator);
  const res = await o.calls.call(
    o.principal,
    "GET",
    `/api/v1/app/${app}/attempt/endpoint/${encodeURIComponent(filters.endpoint)}?${apiQuery}`,
  );
  if (res.status === 422 || res.status === 400)
    return { status: res.status, body: refused(form, res.body?.detail) };
  if (res.status >= 400) throw answerError(res);
  const page = res.body;
  const here = (iterator: string) => o.pathOf({ ...attemptFilterParams(filters), iterator });
  return {
    status: 200,
    body: html`${form}
${attemptTable(page.data, o.messageLink)}
<p class="pager">${q.iterator && page.prevIterator ? html`<a href="${here(page.prevIterator)}">Newer</a> ` : ""}${
      !page.done && page.iterator ? html`<a href="${here(page.iterator)}">Older</a>` : ""
    }</p>
<p class="muted" data-testid="export-links">Export this list (up to 100,000 attempts, newest first): <a href="${o.exportOf({ ...attemptFilterParams(filters), format: "csv" })}" download>CSV</a> · <a href="${o.exportOf({ ...attemptFilterParams(filters), format: "json" })}" download>JSON</a></p>`,
  };
}

/**
 * The attempt export of the API for a page's query, passed on as it streams; without an
 * endpoint, the first endpoint's, as the page shows it.
 */
export async function sendAttemptExport(
  reply: FastifyReply,
  calls: InProcessCalls,
  principal: Principal,
  appId: string,
  query: unknown,
): Promise<FastifyReply> {
  const filters = attemptFiltersOf(query);
  if (!filters.endpoint) {
    const eps = await calls.call(
      principal,
      "GET",
      `/api/v1/app/${encodeURIComponent(appId)}/endpoint?limit=1`,
    );
    if (eps.status >= 400) throw answerError(eps);
    filters.endpoint = eps.body.data[0]?.id ?? "";
    if (!filters.endpoint) throw notFound("endpoint");
  }
  const path = `/api/v1/app/${encodeURIComponent(appId)}/export/attempt/endpoint/${encodeURIComponent(filters.endpoint)}`;
  return sendExport(
    reply,
    calls,
    principal,
    path,
    attemptApiQuery(filters),
    queryStrings(query).format,
  );
}
