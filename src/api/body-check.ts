/**
 * What JSON schema cannot say about a request body, checked before validation: no string
 * (key or value) outside the message payload may hold NUL (PostgreSQL text cannot) or a
 * lone surrogate (jsonb refuses it), and nothing outside the payload nests deeper than
 * MAX_DEPTH. The walk is iterative, so hostile nesting cannot overflow the stack. The
 * payload is stored as the raw JSON text and is exempt.
 */
import { badRequest } from "./errors.ts";

export const MAX_DEPTH = 64;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function badString(s: string): string | null {
  if (s.includes("\u0000"))
    return "NUL characters are not allowed in strings (outside the payload)";
  if (LONE_SURROGATE.test(s)) return "strings must be valid Unicode (a lone surrogate was found)";
  return null;
}

/** A reason to refuse the body, or null. */
export function checkBody(body: unknown): string | null {
  const stack: Array<{ value: unknown; depth: number }> = [];
  if (body && typeof body === "object" && !Array.isArray(body)) {
    for (const [k, v] of Object.entries(body)) {
      const bad = badString(k);
      if (bad) return bad;
      if (k !== "payload") stack.push({ value: v, depth: 1 });
    }
  } else {
    stack.push({ value: body, depth: 0 });
  }
  while (stack.length > 0) {
    const { value, depth } = stack.pop()!;
    if (typeof value === "string") {
      const bad = badString(value);
      if (bad) return bad;
    } else if (value && typeof value === "object") {
      if (depth >= MAX_DEPTH) return `the body nests deeper than ${MAX_DEPTH} levels`;
      const entries = Array.isArray(value)
        ? value.map((v) => ["", v] as const)
        : Object.entries(value);
      for (const [k, v] of entries) {
        const bad = k ? badString(k) : null;
        if (bad) return bad;
        stack.push({ value: v, depth: depth + 1 });
      }
    }
  }
  return null;
}

/** An optional date-time input as a Date; a 400 naming the field when it cannot be one. */
export function timeInput(value: string | null | undefined, field: string): Date | null {
  if (value === null || value === undefined) return null;
  const d = parseTime(value);
  if (!d) throw badRequest(`${field} is not a usable date-time (years 1-9999, no leap seconds)`);
  return d;
}

/** A date-time input as a Date, or null when JavaScript or PostgreSQL could not take it. */
export function parseTime(value: string): Date | null {
  const d = new Date(value);
  if (Number.isNaN(d.getTime())) return null;
  const year = d.getUTCFullYear();
  return year >= 1 && year <= 9999 ? d : null;
}
