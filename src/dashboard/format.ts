/** How the dashboard shows numbers, times and states (every value escaped by html). */
import type { Principal } from "../api/auth.ts";
import { type Html, html } from "./html.ts";

export const dash = html`<span class="muted">–</span>`;

/** 1234 → "1,234". */
export const count = (n: number | null | undefined): Html | string =>
  n === null || n === undefined ? dash : n.toLocaleString("en-US");

/** Milliseconds as "850 ms" or "2.3 s". */
export function ms(value: number | null | undefined): Html | string {
  if (value === null || value === undefined) return dash;
  if (value < 1000) return `${Math.round(value)} ms`;
  return `${(value / 1000).toFixed(value < 10_000 ? 2 : 1)} s`;
}

/** A duration as "45 s", "12 min", "3.5 h", "2.1 d". */
export function age(valueMs: number | null | undefined): Html | string {
  if (valueMs === null || valueMs === undefined) return dash;
  const s = valueMs / 1000;
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 90 * 60) return `${Math.round(s / 60)} min`;
  if (s < 36 * 3600) return `${(s / 3600).toFixed(1)} h`;
  return `${(s / 86_400).toFixed(1)} d`;
}

/** A window of time in words: "24 hours", "7 days", "90 minutes", "1 hour". */
export function windowText(valueMs: number): string {
  const unit = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;
  if (valueMs % 86_400_000 === 0 && valueMs > 86_400_000) return unit(valueMs / 86_400_000, "day");
  if (valueMs % 3_600_000 === 0) return unit(valueMs / 3_600_000, "hour");
  return unit(Math.max(1, Math.round(valueMs / 60_000)), "minute");
}

/** Age of a point in time from now. */
export const since = (at: Date | string | null | undefined): Html | string =>
  at ? age(Date.now() - new Date(at).getTime()) : dash;

/** 0.9876 → "98.8%". */
export const percent = (rate: number | null | undefined): Html | string =>
  rate === null || rate === undefined ? dash : `${(rate * 100).toFixed(1)}%`;

/** A time as ISO in UTC, in a <time> element. */
export function time(at: Date | string | null | undefined): Html {
  if (!at) return dash;
  const iso = new Date(at).toISOString();
  return html`<time datetime="${iso}">${iso.replace("T", " ").slice(0, 19)} UTC</time>`;
}

/** A state as a coloured badge (the class is one of a fixed set, the text escaped). */
export function badge(state: string | null | undefined, text?: string): Html {
  const known =
    /^(closed|open|half_open|ok|warning|critical|delivered|failed|pending|dead_letter|disabled|in_flight|canceled)$/;
  const cls = state && known.test(state) ? state : "";
  return html`<span class="badge ${cls}">${text ?? state ?? "–"}</span>`;
}

/**
 * A delivery's state in words, as the message pages show it (docs/delivery.md, "While an
 * endpoint is disabled"): a row written canceled because its endpoint was disabled and
 * skips reads "skipped (endpoint disabled)", a queued row of a disabled endpoint "held
 * (endpoint disabled)"; any other row its status.
 */
export function deliveryStateText(d: {
  deliveryStatus: string;
  lastErrorKind?: string | null;
  /** its endpoint is disabled now */
  disabled?: boolean;
}): string {
  if (d.deliveryStatus === "canceled" && d.lastErrorKind === "endpoint_disabled")
    return "skipped (endpoint disabled)";
  if (d.disabled && (d.deliveryStatus === "pending" || d.deliveryStatus === "failed"))
    return "held (endpoint disabled)";
  return d.deliveryStatus;
}

/** A delivery's state as a badge (the class its status, the text deliveryStateText). */
export const deliveryBadge = (d: Parameters<typeof deliveryStateText>[0]): Html =>
  badge(d.deliveryStatus, deliveryStateText(d));

/** The app a principal is limited to (null for admin). */
export const ownApp = (p: Principal): string | null => (p.role === "app" ? p.appId : null);
