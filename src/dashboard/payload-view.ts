/**
 * Stored JSON (message payloads) and stored texts from receivers (attempts' errors and
 * responses) as the dashboard's and the portal's pages show them: bounded in size and in
 * depth whatever the API accepted, so no message makes a page big, slow or failing
 * (docs/dashboard.md, "Payloads"). What is left out is said on the page, and the raw
 * payload is a download of its own (payload-download.ts).
 *
 * The JSON is never parsed: a scanner walks the text once with a counter for the depth (no
 * recursion, so 10,000 levels cost what 10 do) and writes it indented until a limit.
 */
import { type Html, html } from "./html.ts";

export interface ViewLimits {
  /** maxDepth: objects and arrays nested deeper are shown as {…} / […]. Default 32. */
  maxDepth: number;
  /**
   * maxChars: characters of indented text shown; the text stops at the first token past
   * it (a token is at most maxTokenChars + 1). Default 32_768 (under 200 KB escaped).
   */
  maxChars: number;
  /** maxTokenChars: a longer string or number is cut short with "…". Default 2_000. */
  maxTokenChars: number;
}

export const VIEW_LIMITS: ViewLimits = { maxDepth: 32, maxChars: 32_768, maxTokenChars: 2_000 };

export interface BoundedJson {
  /** the indented text, at most about maxChars */
  text: string;
  /** objects and arrays shown as {…} / […] for being nested deeper than maxDepth */
  collapsed: number;
  /** strings and numbers cut short */
  cut: number;
  /** UTF-8 bytes of the source after the point where the size limit stopped the text */
  restBytes: number;
}

/** 1234 → "1,234" */
const num = (n: number) => n.toLocaleString("en-US");

const isWs = (c: string | undefined) => c === " " || c === "\n" || c === "\r" || c === "\t";
const DELIMITERS = new Set([",", ":", "{", "}", "[", "]", '"', " ", "\n", "\r", "\t"]);

function skipWs(s: string, i: number): number {
  while (i < s.length && isWs(s[i])) i++;
  return i;
}

/** `i` is at an opening quote; the index just past the closing one (or the end). */
function stringEnd(s: string, i: number): number {
  for (let j = i + 1; j < s.length; j++) {
    if (s[j] === "\\") j++;
    else if (s[j] === '"') return j + 1;
  }
  return s.length;
}

/** `i` is at `{` or `[`; the index just past the bracket that closes it (or the end). */
function containerEnd(s: string, i: number): number {
  let depth = 0;
  for (let j = i; j < s.length; j++) {
    const c = s[j];
    if (c === '"') j = stringEnd(s, j) - 1;
    else if (c === "{" || c === "[") depth++;
    else if (c === "}" || c === "]") {
      depth--;
      if (depth === 0) return j + 1;
    }
  }
  return s.length;
}

/** A string token cut to about `max` characters, never inside an escape or a surrogate pair. */
function cutString(token: string, max: number): string {
  let j = 1;
  while (j < max) {
    const next = token[j] === "\\" ? (token[j + 1] === "u" ? j + 6 : j + 2) : j + 1;
    if (next > max) break;
    j = next;
  }
  const code = token.charCodeAt(j - 1);
  if (code >= 0xd800 && code <= 0xdbff) j--;
  return `${token.slice(0, j)}…"`;
}

/** JSON text indented, with what is deeper or longer than `limits` left out (see above). */
export function boundedJson(json: string, limits: Partial<ViewLimits> = {}): BoundedJson {
  const { maxDepth, maxChars, maxTokenChars } = { ...VIEW_LIMITS, ...limits };
  const out: string[] = [];
  let size = 0;
  let depth = 0;
  let collapsed = 0;
  let cut = 0;
  const emit = (s: string) => {
    out.push(s);
    size += s.length;
  };
  const newline = () => emit(`\n${"  ".repeat(depth)}`);

  let i = skipWs(json, 0);
  while (i < json.length && size < maxChars) {
    const c = json[i]!;
    if (isWs(c)) {
      i++;
    } else if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      const inside = skipWs(json, i + 1);
      if (json[inside] === close) {
        emit(c + close);
        i = inside + 1;
      } else if (depth >= maxDepth) {
        emit(`${c}…${close}`);
        collapsed++;
        i = containerEnd(json, i);
      } else {
        emit(c);
        depth++;
        newline();
        i++;
      }
    } else if (c === "}" || c === "]") {
      depth = Math.max(0, depth - 1);
      newline();
      emit(c);
      i++;
    } else if (c === ",") {
      emit(",");
      newline();
      i++;
    } else if (c === ":") {
      emit(": ");
      i++;
    } else {
      // a string, a number or a literal (or, in text that is not JSON, anything up to the
      // next delimiter: the view never refuses text)
      let end = i + 1;
      if (c === '"') end = stringEnd(json, i);
      else while (end < json.length && !DELIMITERS.has(json[end]!)) end++;
      let token = json.slice(i, end);
      if (token.length > maxTokenChars + 1) {
        token = c === '"' ? cutString(token, maxTokenChars) : `${token.slice(0, maxTokenChars)}…`;
        cut++;
      }
      emit(token);
      i = end;
    }
  }
  i = skipWs(json, i);
  const restBytes = i < json.length ? Buffer.byteLength(json.slice(i)) : 0;
  return { text: out.join(""), collapsed, cut, restBytes };
}

/**
 * A payload block: the masked payload, bounded, the notes saying what is left out, and the
 * link to the raw payload. `masked` is the stored JSON text after the redactor (masking
 * sees whole values; the bounds come after).
 */
export function payloadView(
  masked: string,
  rawBytes: number,
  downloadHref: string,
  limits: Partial<ViewLimits> = {},
): Html {
  const { maxDepth } = { ...VIEW_LIMITS, ...limits };
  const v = boundedJson(masked, limits);
  const notes = [
    v.collapsed > 0 &&
      `{…} and […]: ${num(v.collapsed)} ${v.collapsed === 1 ? "value" : "values"} nested deeper than ${maxDepth} levels, not shown.`,
    v.cut > 0 && `${num(v.cut)} long ${v.cut === 1 ? "value" : "values"} cut short (…).`,
    v.restBytes > 0 && `… ${num(v.restBytes)} more bytes not shown.`,
  ].filter((n): n is string => typeof n === "string");
  return html`<pre data-testid="payload" data-payload>${v.text}</pre>
${notes.length > 0 && html`<p class="notice" data-testid="payload-elided">${notes.join(" ")}</p>`}
<p><a href="${downloadHref}" download data-testid="payload-download">Download the raw payload</a> <span class="muted">(${num(rawBytes)} bytes of JSON as stored, nothing masked)</span></p>`;
}

/** A stored text (an error, a response body) cut to `max` characters, saying how many more. */
export function clippedText(text: string, max = 1_000): string {
  if (text.length <= max) return text;
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${text.slice(0, end)}… (${num(text.length - end)} more characters)`;
}
