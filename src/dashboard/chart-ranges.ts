/**
 * The time ranges a chart page offers (?hours=1, 6 or 24) and the bucket each is drawn in,
 * the range links, and the chart source URL's query: shared by the dashboard's overview and
 * endpoint page and the portal's endpoint page (docs/dashboard.md, "Charts").
 */
import { type Html, html } from "./html.ts";
import { queryStrings } from "./query.ts";

/** The chart ranges in hours, with the bucket each uses in minutes. */
export const CHART_RANGES: Readonly<Record<number, number>> = { 1: 1, 6: 5, 24: 5 };

/** The ranges the latency window holds (HOOKRELAY_LATENCY_WINDOW_MS; the API's limit). */
export function rangesWithin(windowMs: number): number[] {
  const within = Object.keys(CHART_RANGES)
    .map(Number)
    .filter((h) => h * 3_600_000 <= windowMs);
  return within.length > 0 ? within : [1];
}

/** The range a page's ?hours= asks for: 1, 6 or 24, else the longest the window holds. */
export function chartHours(query: unknown, windowMs: number): number {
  const hours = Number(queryStrings(query).hours);
  const offered = rangesWithin(windowMs);
  return offered.includes(hours) ? hours : offered[offered.length - 1]!;
}

/** The bucket of a range, in minutes. */
export const bucketMinutesOf = (hours: number): number => CHART_RANGES[hours] ?? 5;

/** A range in words: "last hour", "last 6 hours". */
export const rangeText = (hours: number): string =>
  hours === 1 ? "last hour" : `last ${hours} hours`;

/** A bucket in words: "minute", "5 minutes". */
export const bucketText = (hours: number): string =>
  bucketMinutesOf(hours) === 1 ? "minute" : `${bucketMinutesOf(hours)} minutes`;

/** The query of a range's chart data: hours and bucket_minutes. */
export const chartQuery = (hours: number) => ({ hours, bucket_minutes: bucketMinutesOf(hours) });

/** Links to the ranges of the same page; `hrefOf` builds a range's URL. */
export function rangeLinksTo(
  hrefOf: (hours: number) => string,
  hours: number,
  windowMs: number,
): Html {
  return html`<p class="ranges" data-testid="ranges">Range: ${rangesWithin(windowMs).map((h) =>
    h === hours
      ? html`<strong aria-current="true">${h} h</strong> `
      : html`<a href="${hrefOf(h)}">${h} h</a> `,
  )}</p>`;
}
