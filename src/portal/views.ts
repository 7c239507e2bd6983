/** Small pieces the portal's pages share: figures and badges. */
import { type Html, html } from "../dashboard/html.ts";

/** A success rate (0..1) as a percentage, or a dash. */
export const percent = (rate: number | null | undefined): string =>
  rate === null || rate === undefined ? "–" : `${(rate * 100).toFixed(1)} %`;

/** Milliseconds, or a dash. */
export const ms = (value: number | null | undefined): string =>
  value === null || value === undefined ? "–" : `${Math.round(value)} ms`;

/** An ISO time as its UTC minute, or a dash. */
export const when = (iso: string | null | undefined): string =>
  iso ? `${iso.slice(0, 19).replace("T", " ")} UTC` : "–";

/** A state as a badge; the class comes from a fixed list, the text is escaped. */
const BADGES = new Set([
  "closed",
  "open",
  "half_open",
  "ok",
  "disabled",
  "delivered",
  "failed",
  "pending",
  "dead_letter",
  "warning",
]);
export const badge = (state: string, text: string = state): Html =>
  html`<span class="badge ${BADGES.has(state) ? state : "warning"}">${text.replace("_", " ")}</span>`;

/** The event types an endpoint listens to, or "all events". */
export const eventTypesText = (types: string[] | null | undefined): string =>
  types && types.length > 0 ? types.join(", ") : "all events";
