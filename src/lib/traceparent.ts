/**
 * The W3C Trace Context `traceparent` header (version 00): `00-<trace id>-<parent id>-<flags>`,
 * 32 and 16 lowercase hex digits and two for the flags (bit 0: sampled). An all-zero trace or
 * parent id is invalid. Versions after 00 are read by their first four fields, as the
 * standard asks; version ff is invalid. What hookrelay stores and sends is always version 00.
 */
import { randomBytes } from "node:crypto";

export interface TraceParent {
  /** 32 lowercase hex digits */
  traceId: string;
  /** 16 lowercase hex digits: the span this context names */
  spanId: string;
  /** 0-255; bit 0 is "sampled" */
  flags: number;
}

const V00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
// a later version: its first four fields, then nothing or "-" and more
const LATER = /^([0-9a-e][0-9a-f]|f[0-9a-e])-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

/** The parsed header; null when it is not a valid traceparent (absent, malformed, all zeros). */
export function parseTraceparent(header: unknown): TraceParent | null {
  if (typeof header !== "string" || header.length > 512) return null;
  const value = header.trim();
  const m = V00.exec(value) ?? (value.startsWith("00-") ? null : LATER.exec(value));
  if (!m) return null;
  const [traceId, spanId, flags] = m[0].startsWith("00-") ? [m[1], m[2], m[3]] : [m[2], m[3], m[4]];
  if (traceId === undefined || spanId === undefined || flags === undefined) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** The version-00 header of a context. */
export function formatTraceparent(tp: TraceParent): string {
  return `00-${tp.traceId}-${tp.spanId}-${(tp.flags & 0xff).toString(16).padStart(2, "0")}`;
}

// Random bytes are drawn 4 KiB at a time: one call per attempt cost more than the rest of
// making its header.
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let taken = POOL_BYTES;

/** A random span id (never all zeros). */
export function newSpanId(): string {
  for (;;) {
    if (taken + 8 > pool.length) {
      pool = randomBytes(POOL_BYTES);
      taken = 0;
    }
    const id = pool.toString("hex", taken, taken + 8);
    taken += 8;
    if (id !== ZERO_SPAN) return id;
  }
}

/** The header a child of `parent` sends: same trace and flags, a new span id. */
export function childTraceparent(parent: string): string | null {
  const tp = parseTraceparent(parent);
  return tp ? formatTraceparent({ ...tp, spanId: newSpanId() }) : null;
}
