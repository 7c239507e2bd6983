/**
 * The "Replay" form the dashboard's and the portal's endpoint pages share (docs/dashboard.md,
 * "Replaying an endpoint"): what to send again (recover the failed and dead-lettered, send
 * what the endpoint missed, or replay by filter), the window, the bulk replay's filters and
 * the pace, with "Count first" (a dry run) and "Start replay". Like the endpoint form, it
 * only collects: a post becomes one call of the API's recovery routes
 * (docs/recovery.md), whose checks and words are the only ones.
 */
import { badRequest } from "../api/errors.ts";
import { field, fields } from "./form-body.ts";
import { type Html, html } from "./html.ts";
import { ownKey } from "./query.ts";

/** The three kinds, by the form's value: the API route each posts to, and its words. */
export const REPLAY_KINDS = {
  recover: {
    task: "endpoint.recover",
    label: "Recover failed and dead-lettered",
    help: "Deliveries of the window that failed (waiting for a retry) or died, sent again now.",
  },
  "replay-missing": {
    task: "endpoint.replay",
    label: "Send what it missed",
    help: "Messages of the window it never got: skipped while it was disabled, canceled, or sent before it existed but matching its event types and channels.",
  },
  "bulk-replay": {
    task: "endpoint.bulk-replay",
    label: "Replay by filter",
    help: "Every message of the window that matches the filters below, whatever happened to it.",
  },
} as const;
export type ReplayKind = keyof typeof REPLAY_KINDS;

/** The delivery statuses a replay by filter may select (none checked: all of them). */
const STATUSES: [string, string][] = [
  ["delivered", "delivered"],
  ["failed", "failed"],
  ["dead_letter", "dead letter"],
  ["canceled", "canceled or skipped"],
];

/** What the form shows: as typed, so a refused post comes back unchanged. */
export interface ReplayFormValues {
  kind: string;
  since: string;
  until: string;
  eventTypes: string;
  channel: string;
  tag: string;
  statuses: string[];
  rate: string;
}

/** `at` as a datetime-local value in UTC, to the minute ("2024-05-01T10:00"). */
const utcMinute = (at: number): string => new Date(at).toISOString().slice(0, 16);

/** A new form: recover, over the last 24 hours (or the retention, if shorter). */
export function newReplayValues(retentionMs: number, kind?: string, now = Date.now()) {
  // a minute inside the retention, so the default is never refused as beyond it
  const back = Math.min(86_400_000, retentionMs - 60_000);
  return {
    kind: ownKey(REPLAY_KINDS, kind) ?? "recover",
    since: utcMinute(now - back),
    until: "",
    eventTypes: "",
    channel: "",
    tag: "",
    statuses: [],
    rate: "",
  } satisfies ReplayFormValues;
}

/** The values as posted. */
export function replayValuesOfForm(body: unknown): ReplayFormValues {
  return {
    kind: field(body, "kind"),
    since: field(body, "since"),
    until: field(body, "until"),
    eventTypes: field(body, "eventTypes"),
    channel: field(body, "channel"),
    tag: field(body, "tag"),
    statuses: fields(body, "status").filter(Boolean),
    rate: field(body, "rate"),
  };
}

/** A time as typed: a date-time without a zone is UTC (the form says so); else as given. */
export function utcTime(value: string): string {
  return /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value) ? `${value}Z` : value;
}

/** What "Count first" or "Start replay" asks the API: the route's last segment and the body. */
export interface ReplayRequest {
  kind: ReplayKind;
  body: Record<string, unknown>;
}

/**
 * The API request a posted form stands for. Values go as typed for the API to refuse in its
 * own words (an empty `since` is "not a usable date-time", a rate that is not digits "must
 * be integer"); only the kind is the form's to check. The filters go with a replay by
 * filter only, as the other two routes take none.
 */
export function replayRequestOfForm(body: unknown, dryRun: boolean): ReplayRequest {
  const v = replayValuesOfForm(body);
  const kind = ownKey(REPLAY_KINDS, v.kind);
  if (!kind) {
    throw badRequest("choose what to replay: recover, send what it missed, or replay by filter");
  }
  const out: Record<string, unknown> = { since: utcTime(v.since), dryRun };
  if (v.until) out.until = utcTime(v.until);
  if (v.rate) out.ratePerSecond = /^\d+$/.test(v.rate) ? Number(v.rate) : v.rate;
  if (kind === "bulk-replay") {
    const types = v.eventTypes.split(/[\s,]+/).filter(Boolean);
    if (types.length) out.eventTypes = [...new Set(types)];
    if (v.channel) out.channel = v.channel;
    if (v.tag) out.tag = v.tag;
    if (v.statuses.length) out.status = [...new Set(v.statuses)];
  }
  return { kind, body: out };
}

/** A rate in words: "10 per second", "0.5 per second". */
export const rateText = (perSecond: number): string =>
  `${Number.isInteger(perSecond) ? perSecond : perSecond.toFixed(2)} per second`;

/**
 * The pace a replay of the endpoint gets when the form leaves it empty, as the API resolves
 * it: the endpoint's strictest rate limit, else the server's replay pace.
 */
export function defaultPace(
  limits: {
    ratePerSecond: number | null;
    ratePerMinute: number | null;
    ratePerHour: number | null;
  },
  serverRate: number,
): string {
  const rates = [
    limits.ratePerSecond,
    limits.ratePerMinute === null ? null : limits.ratePerMinute / 60,
    limits.ratePerHour === null ? null : limits.ratePerHour / 3600,
  ].filter((r): r is number => r !== null && r > 0);
  return rates.length
    ? `${rateText(Math.min(...rates))}, the endpoint's rate limit`
    : `${rateText(serverRate)}, the server's replay pace (the endpoint has no rate limit)`;
}

export interface ReplayFormOptions {
  action: string;
  csrfToken: string;
  values: ReplayFormValues;
  /** the default pace in words (defaultPace) */
  pace: string;
  /** the API's refusal of the last post, shown above the form */
  error: string | null;
}

/** The form, with its two buttons (Enter counts: the first submit button is "Count first"). */
export function replayForm(o: ReplayFormOptions): Html {
  const v = o.values;
  return html`${o.error && html`<p class="error" role="alert" data-testid="replay-error">${o.error}</p>`}
<form method="post" action="${o.action}" class="replay-form" data-testid="replay-form">
<input type="hidden" name="_csrf" value="${o.csrfToken}">
<fieldset><legend>What to send again</legend>
${Object.entries(REPLAY_KINDS).map(
  ([value, k]) =>
    html`<label class="choice"><input type="radio" name="kind" value="${value}"${v.kind === value ? html` checked` : ""}> <strong>${k.label}</strong><br><span class="muted">${k.help}</span></label>`,
)}
</fieldset>
<div class="form-grid">
<p><label>Messages created since (UTC)<br><input type="datetime-local" name="since" step="1" value="${v.since}" required></label></p>
<p><label>Until (UTC, empty: now)<br><input type="datetime-local" name="until" step="1" value="${v.until}"></label></p>
<p><label>Pace (per second)<br><input type="number" name="rate" min="1" step="1" value="${v.rate}" placeholder="default"></label><br>
<span class="muted" data-testid="replay-pace">Empty: ${o.pace}.</span></p>
</div>
<fieldset><legend>Filters <span class="muted">(replay by filter only)</span></legend>
<div class="form-grid">
<p><label>Event types (comma-separated; empty: all)<br><input type="text" name="eventTypes" maxlength="2048" value="${v.eventTypes}"></label></p>
<p><label>Channel<br><input type="text" name="channel" maxlength="256" value="${v.channel}"></label></p>
<p><label>Tag<br><input type="text" name="tag" maxlength="256" value="${v.tag}"></label></p>
</div>
<p>Deliveries that are <span class="muted">(none checked: any of these)</span><br>${STATUSES.map(
    ([value, label]) =>
      html`<label class="inline"><input type="checkbox" name="status" value="${value}"${v.statuses.includes(value) ? html` checked` : ""}> ${label}</label> `,
  )}</p>
</fieldset>
<p class="actions"><button type="submit" name="intent" value="count">Count first</button>
<button type="submit" name="intent" value="start" class="primary">Start replay</button></p>
</form>`;
}
