/**
 * Junk for the hostile-input fuzz (docs/security.md, "Input"): characters (NUL, lone
 * surrogates, any code point), strings that mean something somewhere (SQL, paths, ids,
 * prototype names), path parameters as sent on the wire and query strings.
 */
import fc from "fast-check";

const PRINTABLE = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i));
export const printable = (maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...PRINTABLE, "\t"), maxLength });

/** Any code point, lone surrogates and NUL included. */
export const anyChar = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
  },
  { weight: 1, arbitrary: fc.constant("\u0000") },
);

/**
 * Names of members every JS object inherits (docs/security.md, "Input"): as a query or path
 * value, a query key or a form field, each must be a plain unknown name (a 4xx or the
 * default), never a lookup that finds Object.prototype's member.
 */
export const MEMBER_NAMES = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "prototype",
  "__defineGetter__",
] as const;

const SPECIAL = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "\udfff\ud800",
  "💥",
  "../../etc/passwd",
  "' or 1=1 --",
  "$" + "{jndi:ldap://x/a}",
  "<script>alert(1)</script>",
  "null",
  "undefined",
  ...MEMBER_NAMES,
  "app_",
  "ep_0000000000000000000000",
  `msg_${"z".repeat(22)}`,
  "-",
  "--",
  "-app_x",
  "9".repeat(40),
  "1e309",
  "-0",
  "NaN",
  "Infinity",
  "true",
  "[]",
  "{}",
  "dlv_0",
  "dlv_-1",
  "dlv_1.5",
  "dlv_9007199254740993",
  "atmpt_-1",
  "atmpt_1e3",
  "key_",
  "\r\nX-Injected: 1",
];

export const junkString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: anyChar, maxLength: 30 }) },
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL) },
  { weight: 1, arbitrary: fc.string({ unit: anyChar, minLength: 200, maxLength: 3000 }) },
);

/** Percent-encodes the UTF-8 of a string (lone surrogates become U+FFFD, as on the wire). */
export const pct = (s: string) =>
  [...Buffer.from(s, "utf8")]
    .map((b) =>
      /[A-Za-z0-9\-._~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, "0")}`,
    )
    .join("");

const RAW_PATH_JUNK = [
  "%",
  "%zz",
  "%C0%AF",
  "%ED%A0%80",
  "%FF%FE",
  "..%2F..%2F",
  "%2e%2e",
  "%00",
  "a%00b",
  "%25",
  "%u0041",
  "%E0%A4%A",
  ".",
  "..",
  "%2F",
  "a%2Fb",
  "%3F%23",
  "a;b",
  "a,b",
  "*",
  "%20",
  "+",
];

export type ParamChoice = { real: number } | { text: string };
export const paramArb: fc.Arbitrary<ParamChoice> = fc.oneof(
  { weight: 4, arbitrary: fc.nat(3).map((real) => ({ real })) },
  { weight: 3, arbitrary: junkString.map((s) => ({ text: pct(s) })) },
  { weight: 2, arbitrary: fc.constantFrom(...RAW_PATH_JUNK).map((text) => ({ text })) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 200, max: 3000 }).map((n) => ({ text: "a".repeat(n) })),
  },
);

/** The query parameters the dashboard's and the portal's pages read. */
export const PAGE_QUERY_KEYS = [
  "sort",
  "dir",
  "state",
  "slow",
  "app",
  "page",
  "q",
  "done",
  "n",
  "hours",
  "iterator",
  "ranked",
  "next",
  "endpoint_id",
  "app_id",
  "bucket_minutes",
  "status_code",
  "error_kind",
  "since",
] as const;

const QUERY_KEYS = [
  // (a key in both lists is drawn twice as often: no harm)
  ...PAGE_QUERY_KEYS,
  "limit",
  "iterator",
  "order",
  "with_content",
  "event_types",
  "channel",
  "tag",
  "before",
  "after",
  "status",
  "endpoint_id",
  "app_id",
  "state",
  "slow",
  "since",
  "until",
  "status_code",
  "error_kind",
  "get_if_exists",
  "include_archived",
  "expunge",
  ...MEMBER_NAMES,
  "__proto__[hrPolluted]",
  "constructor[prototype][hrPolluted]",
  "a[b][c]",
  "limit[]",
];
const QUERY_VALUES = [
  "99999999999999999999999",
  "-1",
  "0",
  "1",
  "250",
  "251",
  "1e3",
  "0x10",
  "1.5",
  "true",
  "false",
  "ascending",
  "descending",
  "-",
  "-app_x",
  "closed",
  "2024-02-30T25:61:00Z",
  "1970-01-01T00:00:00Z",
  "275760-09-13T00:00:00.001Z",
  "0000-01-01T00:00:00Z",
  "2016-12-31T23:59:60Z",
  "2024-01-01T00:00:00-23:59",
  "1e999",
  "-1e400",
  "Infinity",
  "dlv_1",
  "atmpt_1",
  "a,b,,c",
  "",
  ...MEMBER_NAMES,
];
export const queryArb = fc
  .array(
    fc.tuple(
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...QUERY_KEYS) },
        { weight: 1, arbitrary: junkString },
      ),
      fc.oneof(
        { weight: 3, arbitrary: fc.constantFrom(...QUERY_VALUES) },
        { weight: 2, arbitrary: junkString },
        { weight: 1, arbitrary: fc.integer().map(String) },
        { weight: 1, arbitrary: fc.double().map(String) },
      ),
    ),
    { maxLength: 8 },
  )
  .map((pairs) => pairs.map(([k, v]) => `${pct(k)}=${pct(v)}`).join("&"));
