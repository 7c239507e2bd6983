/**
 * HTML that escapes by default (docs/dashboard.md, "Escaping and masking"). `html` is a tagged template:
 * every interpolated value is escaped for text and for quoted attribute values, unless it is
 * already `Html` (another `html` result, or `raw()` of a fragment the code itself wrote).
 * Arrays are rendered item by item and joined; null, undefined and false render nothing.
 *
 *   html`<td title="${row.url}">${row.url}</td>`   // both escaped
 *   html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`
 *
 * Attributes must be quoted ("..."): an unquoted attribute value is not made safe by
 * escaping. A user-supplied string never goes into href/src (use `dashboardPath`), a style,
 * or an event-handler attribute.
 */

const HTML = Symbol("html");

/** A fragment that is already safe markup. */
export interface Html {
  readonly [HTML]: string;
}

const make = (text: string): Html => ({ [HTML]: text });

export const isHtml = (value: unknown): value is Html =>
  typeof value === "object" && value !== null && HTML in value;

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
  "`": "&#96;",
};

/** The text, escaped for an HTML text node or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ENTITIES[c]!);
}

/** Values as markup: Html as it is, arrays item by item, anything else escaped. */
function render(value: unknown): string {
  if (value === null || value === undefined || value === false) return "";
  if (isHtml(value)) return value[HTML];
  if (Array.isArray(value)) return value.map(render).join("");
  return escapeHtml(String(value));
}

/** The tagged template: literal parts as written, every value escaped (see above). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0] ?? "";
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? "");
  return make(out);
}

/** Trusted markup, taken as it is: only for fragments this code wrote itself, never input. */
export const raw = (markup: string): Html => make(markup);

/** The markup as a string (for a reply body). */
export const toHtmlString = (fragment: Html): string => fragment[HTML];

/**
 * A dashboard URL from path segments and query values, each segment and value percent-
 * encoded (so an id from the database cannot leave its place in the URL). Undefined, null
 * and "" query values are left out.
 */
export function dashboardPath(
  segments: readonly (string | number)[],
  query: Record<string, string | number | boolean | null | undefined> = {},
): string {
  const path = ["/dashboard", ...segments.map((s) => encodeURIComponent(String(s)))].join("/");
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}
