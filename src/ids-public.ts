/**
 * Delivery and attempt ids as anyone outside the database sees them (docs/public-ids.md):
 * `dlv_` or `atmpt_` and 11 characters, e.g. `dlv_Q3fZ08kTb1x`. The rows keep their
 * sequential bigint keys; what is shown is a keyed permutation of the 64-bit number, so a
 * shown id says nothing about how many deliveries the installation made, or how fast, and
 * turns back into the row's key with no lookup.
 *
 * The permutation is a 6-round Feistel network over two 32-bit halves whose round function
 * is the first 4 bytes of SHA-256(secret ‖ prefix ‖ round ‖ half): keyed by the
 * installation's random secret (migration 0014), and by the prefix, so a delivery and an
 * attempt with the same number get unrelated ids. The 64-bit result is written in base62:
 * a first character from A–V (the value's top digit, 0–21, as a letter) and 10 more, so a
 * shown id always starts with a letter and never reads as an old numeric one.
 * `hookrelay_public_id()` in 0014_public_ids.sql computes the same ids in SQL (operational
 * events are written in SQL); test/public-ids-sql.test.ts keeps the two equal.
 *
 * Old ids (`dlv_17`, `atmpt_9`, or the bare number) are still read: an operator's always,
 * an app-scoped key's only up to the highest id that existed when ids became opaque, since
 * those were shown in that form; a newer number would let a tenant find where its own rows
 * fall in the global sequence by probing.
 */
import { createHash } from "node:crypto";

export const PUBLIC_ID_PREFIX = { delivery: "dlv_", attempt: "atmpt_" } as const;
export type PublicIdKind = keyof typeof PUBLIC_ID_PREFIX;

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/** characters after the first: 62^10 values */
const TAIL = 10;
/** the first character is ALPHABET[10 + top digit]; 2^64 / 62^10 < 22, so A–V */
const FIRST = 10;
const ROUNDS = 6;
const HALF = 2 ** 32;
const OPAQUE_TAIL = /^[A-V][0-9A-Za-z]{10}$/;
const LEGACY_TAIL = /^[0-9]{1,16}$/;

/** Who reads an id: an operator (admin key, dashboard as admin) or a tenant (app key, portal). */
export type IdReader = "operator" | "tenant";

/**
 * An id as read: the row key it names; `unknown` when it has an id's shape but names no row
 * this reader may see (no row could have it, or an old number a tenant may not use);
 * `malformed` when it has no id's shape at all.
 */
export type ReadId = { ok: true; id: number } | { ok: false; reason: "unknown" | "malformed" };

export interface PublicIds {
  /** the shown id of row key `n` (a non-negative safe integer) */
  format(kind: PublicIdKind, n: number): string;
  /** the row key a shown id stands for (format's inverse), or null for any other string */
  parse(kind: PublicIdKind, shown: string): number | null;
  /** what a shown id, an old `dlv_17`-style id or a bare number names, for `reader` */
  read(kind: PublicIdKind, raw: string, reader: IdReader): ReadId;
}

export interface PublicIdOptions {
  /** the installation's secret (32 random bytes; any length works) */
  secret: Uint8Array;
  /** the highest row keys that were shown in the old form; tenants may use old ids up to these */
  legacyMax: Record<PublicIdKind, number>;
}

export function makePublicIds({ secret, legacyMax }: PublicIdOptions): PublicIds {
  // SHA-256 states that have taken secret ‖ prefix already; each round copies one
  const keyed = (prefix: string) => createHash("sha256").update(secret).update(prefix);
  const states = {
    delivery: keyed(PUBLIC_ID_PREFIX.delivery),
    attempt: keyed(PUBLIC_ID_PREFIX.attempt),
  };
  const block = Buffer.alloc(5);
  const round = (kind: PublicIdKind, i: number, half: number): number => {
    block[0] = i;
    block.writeUInt32BE(half, 1);
    return states[kind].copy().update(block).digest().readUInt32BE(0);
  };

  function format(kind: PublicIdKind, n: number): string {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a row key: ${n}`);
    const prefix = PUBLIC_ID_PREFIX[kind];
    let l = Math.floor(n / HALF);
    let r = n % HALF;
    for (let i = 0; i < ROUNDS; i++) [l, r] = [r, (l ^ round(kind, i, r)) >>> 0];
    let v = (BigInt(l) << 32n) | BigInt(r);
    let tail = "";
    for (let i = 0; i < TAIL; i++) {
      tail = ALPHABET[Number(v % 62n)] + tail;
      v /= 62n;
    }
    return prefix + ALPHABET[FIRST + Number(v)] + tail;
  }

  function parse(kind: PublicIdKind, shown: string): number | null {
    const prefix = PUBLIC_ID_PREFIX[kind];
    if (!shown.startsWith(prefix)) return null;
    const tail = shown.slice(prefix.length);
    if (!OPAQUE_TAIL.test(tail)) return null;
    let v = BigInt(ALPHABET.indexOf(tail[0]!) - FIRST);
    for (const c of tail.slice(1)) v = v * 62n + BigInt(ALPHABET.indexOf(c));
    if (v >= 1n << 64n) return null;
    let l = Number(v >> 32n);
    let r = Number(v & 0xffffffffn);
    for (let i = ROUNDS - 1; i >= 0; i--) [l, r] = [(r ^ round(kind, i, l)) >>> 0, l];
    const n = l * HALF + r;
    return Number.isSafeInteger(n) ? n : null;
  }

  function read(kind: PublicIdKind, raw: string, reader: IdReader): ReadId {
    const prefix = PUBLIC_ID_PREFIX[kind];
    const tail = raw.startsWith(prefix) ? raw.slice(prefix.length) : null;
    if (tail !== null && OPAQUE_TAIL.test(tail)) {
      const id = parse(kind, raw);
      // row keys start at 1; 0 or a number past 2^53 is the shape of an id that names nothing
      return id === null || id === 0 ? { ok: false, reason: "unknown" } : { ok: true, id };
    }
    const digits = tail ?? raw;
    if (!LEGACY_TAIL.test(digits)) return { ok: false, reason: "malformed" };
    const id = Number(digits);
    if (!Number.isSafeInteger(id) || id <= 0) return { ok: false, reason: "malformed" };
    if (reader === "tenant" && id > legacyMax[kind]) return { ok: false, reason: "unknown" };
    return { ok: true, id };
  }

  return { format, parse, read };
}
