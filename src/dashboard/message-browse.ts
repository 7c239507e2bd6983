/**
 * The message list's pieces that the dashboard and the portal share (docs/browse.md): the
 * filters as a page's query string reads them and as the API's message list and export
 * take them, the filter form, the table with its status column, and the export links.
 * Times are typed in UTC (a datetime-local field); what the API refuses (an unknown
 * state, a date that is not one) comes back in its own words, shown on the page.
 */
import type { FastifyReply } from "fastify";
import type { Principal } from "../api/auth.ts";
import type { InProcessCalls } from "../api/in-process.ts";
import { DeliveryStatus } from "../domain/delivery-states.ts";
import { badge, time } from "./format.ts";
import { type Html, html } from "./html.ts";
import { queryStrings } from "./query.ts";

/** The filters as typed ("" is none). */
export interface MessageFilters {
  eventTypes: string;
  channel: string;
  status: string;
  endpoint: string;
  after: string;
  before: string;
}

const NAMES = {
  eventTypes: "event_types",
  channel: "channel",
  status: "status",
  endpoint: "endpoint",
  after: "after",
  before: "before",
} as const satisfies Record<keyof MessageFilters, string>;

/** The filters of a page's query string. */
export function messageFiltersOf(query: unknown): MessageFilters {
  const q = queryStrings(query);
  const get = (k: keyof MessageFilters) => (q[NAMES[k]] ?? "").trim().slice(0, 256);
  return {
    eventTypes: get("eventTypes"),
    channel: get("channel"),
    status: get("status"),
    endpoint: get("endpoint"),
    after: get("after"),
    before: get("before"),
  };
}

/** The filters as the page's own query values (for links that keep them). */
export function filterParams(f: MessageFilters): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, name] of Object.entries(NAMES)) out[name] = f[k as keyof MessageFilters];
  return out;
}

/**
 * A datetime-local value ("2026-12-06T08:30", seconds only when not 0) is UTC; anything
 * else goes as typed, for the API to take or refuse.
 */
function utc(t: string): string {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d)(:\d\d(\.\d+)?)?$/.exec(t);
  return m ? `${m[1]}${m[2] ?? ":00"}Z` : t;
}

/** The API's query for the filters (the message list's and the export's). */
export function messageApiQuery(f: MessageFilters): URLSearchParams {
  const q = new URLSearchParams();
  for (const t of f.eventTypes.split(/[\s,]+/).filter(Boolean)) q.append("event_types", t);
  if (f.channel) q.set("channel", f.channel);
  if (f.status) q.append("delivery_status", f.status);
  if (f.endpoint) q.set("endpoint_id", f.endpoint);
  if (f.after) q.set("after", utc(f.after));
  if (f.before) q.set("before", utc(f.before));
  return q;
}

export interface FilterFormOptions {
  action: string;
  filters: MessageFilters;
  /** the endpoints to pick from (id, and what to show) */
  endpoints: readonly { id: string; label: string }[];
  /** before the filters (the dashboard's app picker) */
  lead?: Html;
}

/** An endpoint's URL cut short enough for a select on a phone (its own page shows it whole). */
export const shortLabel = (label: string): string =>
  label.length > 32 ? `${label.slice(0, 31)}…` : label;

/** The filter form (GET): every filter is in the URL, so a view can be bookmarked. */
export function messageFilterForm(o: FilterFormOptions): Html {
  const f = o.filters;
  const option = (value: string, label: string, current: string) =>
    html`<option value="${value}"${value === current ? html` selected` : ""}>${label}</option>`;
  return html`<form class="filters" method="get" action="${o.action}" role="search" aria-label="Filter messages" data-testid="message-filters">
${o.lead ?? ""}
<label>Event types<input name="event_types" value="${f.eventTypes}" maxlength="256" placeholder="order.paid, order.failed"></label>
<label>Channel<input name="channel" value="${f.channel}" maxlength="256"></label>
<label>Status<select name="status">${option("", "any", f.status)}${Object.values(DeliveryStatus).map((s) => option(s, s.replace("_", " "), f.status))}</select></label>
<label>Endpoint<select name="endpoint">${option("", "any", f.endpoint)}${o.endpoints.map((e) => option(e.id, shortLabel(e.label), f.endpoint))}</select></label>
<label>After (UTC)<input type="datetime-local" step="1" name="after" value="${f.after}"></label>
<label>Before (UTC)<input type="datetime-local" step="1" name="before" value="${f.before}"></label>
<button type="submit">Filter</button>
</form>`;
}

/** A message of the API's list with with_status=true. */
export interface ListedMessage {
  id: string;
  eventType: string;
  eventId: string | null;
  channels: string[] | null;
  timestamp: string;
  deliveryStatusCounts?: Record<string, number>;
}

/** The status column: a badge per state its deliveries are in, with how many. */
export function statusCell(counts: Readonly<Record<string, number>> | undefined): Html {
  const entries = Object.entries(counts ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return html`<span class="muted">no endpoint</span>`;
  return html`${entries.map(([s, n]) => badge(s, `${s.replace("_", " ")} ${n}`))}`;
}

/** The table of a page of messages, newest first, with its status column. */
export function messageTable(rows: readonly ListedMessage[], linkOf: (id: string) => string): Html {
  if (rows.length === 0) return html`<p class="muted" role="status">No message matches.</p>`;
  return html`<div class="table-wrap"><table data-testid="message-list">
<thead><tr><th>Time</th><th>Event type</th><th>Message</th><th class="hide-narrow">Event id</th><th class="hide-narrow">Channels</th><th>Status</th></tr></thead>
<tbody>${rows.map(
    (m) => html`<tr>
<td>${time(m.timestamp)}</td>
<td>${m.eventType}</td>
<td><a href="${linkOf(m.id)}"><code>${m.id}</code></a></td>
<td class="text hide-narrow">${m.eventId ?? ""}</td>
<td class="text hide-narrow">${(m.channels ?? []).join(", ")}</td>
<td data-testid="message-status">${statusCell(m.deliveryStatusCounts)}</td>
</tr>`,
  )}</tbody></table></div>`;
}

/** The pager (Newer, Older) and the export links of the filtered list. */
export function listFooter(
  page: { iterator: string | null; prevIterator: string | null; done: boolean },
  newerHref: string | null,
  olderHref: string | null,
  exportHref: (format: "csv" | "json") => string,
): Html {
  return html`<p class="pager">${newerHref ? html`<a href="${newerHref}">Newer</a> ` : ""}${
    !page.done && olderHref ? html`<a href="${olderHref}">Older</a>` : ""
  }</p>
<p class="muted" data-testid="export-links">Export this list (up to 100,000 messages, newest first): <a href="${exportHref("csv")}" download>CSV</a> · <a href="${exportHref("json")}" download>JSON</a></p>`;
}

/** The form again, and why the API refused the filters. */
export function refused(form: Html, detail: unknown): Html {
  return html`${form}<p class="error" role="alert" data-testid="filter-error">These filters cannot be used: ${String(detail ?? "the API refused them")}</p>`;
}

/** The API's export for `query` passed on as it streams, with its file headers. */
export async function sendExport(
  reply: FastifyReply,
  calls: InProcessCalls,
  principal: Principal,
  exportPath: string,
  query: URLSearchParams,
  format: string | undefined,
): Promise<FastifyReply> {
  query.set("format", format === "json" ? "json" : "csv");
  const answer = await calls.stream(principal, `${exportPath}?${query}`);
  for (const name of ["content-type", "content-disposition", "x-hookrelay-export-max-rows"]) {
    const value = answer.headers[name];
    if (typeof value === "string") reply.header(name, value);
  }
  return reply.send(answer.body);
}
