/**
 * Junk bodies and headers for the hostile-input fuzz (docs/security.md, "Input"): JSON text
 * JSON.stringify cannot produce (huge and negative-zero numbers, NUL and lone-surrogate
 * escapes, prototype-pollution keys, deep nesting), invalid UTF-8, odd content types,
 * Authorization headers and idempotency keys.
 */
import fc from "fast-check";
import { junkString, printable } from "./junk-strings.ts";

const FIELDS = [
  "name",
  "uid",
  "url",
  "description",
  "eventType",
  "payload",
  "eventId",
  "channels",
  "tags",
  "deliverAt",
  "application",
  "metadata",
  "headers",
  "secret",
  "key",
  "gracePeriodSeconds",
  "role",
  "appId",
  "deliveryId",
  "endpointId",
  "since",
  "includeFailed",
  "rateLimit",
  "throttleRate",
  "filterTypes",
  "eventTypes",
  "disabled",
  "version",
  "timeoutMs",
  "maxAttempts",
  "retryBaseMs",
  "retryCapMs",
  "maxInFlight",
  "failureThreshold",
  "cooldownMs",
  "ratePerSecond",
  "ratePerMinute",
  "ratePerHour",
  "schemas",
  "groupName",
  "featureFlags",
  "archived",
  "deprecated",
  "__proto__",
  "constructor",
  "prototype",
];

/** JSON text fragments that JSON.stringify cannot produce. */
const SPECIAL_JSON = [
  "1e999999",
  "-1e400",
  "123456789012345678901234567890",
  "0.0000000000000000000000001",
  "-0",
  "9007199254740993",
  "1E+2",
  '"\\u0000"',
  '"a\\u0000b"',
  '"\\ud800"',
  '"\\udfff\\ud800"',
  '"\\uDBFF"',
  "[]",
  "{}",
  "null",
  "true",
  '{"__proto__":{"hrPolluted":1}}',
  '{"constructor":{"prototype":{"hrPolluted":1}}}',
  '{"prototype":{"hrPolluted":1}}',
  `${"[".repeat(200)}${"]".repeat(200)}`,
  '"http://169.254.169.254/latest"',
  '"http://127.0.0.1:9/x"',
  '"whsec_AAAA"',
  `"whsec_${Buffer.alloc(32).toString("base64")}"`,
  '"2024-01-01T00:00:00Z"',
  '"not-a-date"',
  '{"a":"b"}',
  '["x","x"]',
];

export const valueText = fc.oneof(
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)) },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL_JSON) },
  { weight: 2, arbitrary: junkString.map((s) => JSON.stringify(s)) },
);
const objectText = fc
  .array(
    fc.tuple(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...FIELDS) },
        { weight: 1, arbitrary: junkString },
      ),
      valueText,
    ),
    {
      maxLength: 8,
    },
  )
  .map((pairs) => `{${pairs.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`);

export const POLLUTION_BODIES = [
  '{"__proto__":{"hrPolluted":"yes"}}',
  '{"name":"x","__proto__":{"hrPolluted":"yes"}}',
  '{"constructor":{"prototype":{"hrPolluted":"yes"}}}',
  '{"eventType":"x","payload":{"__proto__":{"hrPolluted":"yes"}}}',
  '{"eventType":"x","payload":{"a":[{"constructor":{"prototype":{"hrPolluted":"yes"}}}]}}',
  '{"name":"x","metadata":{"__proto__":"yes"}}',
  '{"url":"http://127.0.0.1:9/","headers":{"__proto__":{"hrPolluted":"yes"}}}',
  '{"description":"x","schemas":{"__proto__":{"hrPolluted":"yes"}}}',
  '{"\\u005f_proto__":{"hrPolluted":"yes"}}',
];

export type Body = string | Buffer | undefined;
export const bodyArb: fc.Arbitrary<Body> = fc.oneof(
  { weight: 5, arbitrary: objectText },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: junkString },
  { weight: 1, arbitrary: fc.constantFrom(...POLLUTION_BODIES, ...SPECIAL_JSON) },
  // deep nesting: ~10k levels inside a message payload (stored as text, never walked)
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1_000, max: 10_000 })
      .map((n) => `{"eventType":"deep","payload":${'{"a":'.repeat(n)}1${"}".repeat(n)}}`),
  },
  // and anywhere else, up to ~10k levels (refused past 64 outside the payload)
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 1, max: 10_000 })
      .map((n) => `{"name":${"[".repeat(n)}"x"${"]".repeat(n)}}`),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.integer({ min: 1, max: 10_000 }),
        fc.constantFrom("tags", "metadata", "application", "schemas"),
      )
      .map(
        ([n, key]) => `{"eventType":"x","payload":{},"${key}":${"[".repeat(n)}${"]".repeat(n)}}`,
      ),
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 10_000 }).map((n) => `${"[".repeat(n)}${"]".repeat(n)}`),
  },
  // invalid UTF-8
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      Buffer.concat([
        Buffer.from('{"name":"'),
        Buffer.from([0xff, 0xfe, 0xc0, 0xaf, 0xed, 0xa0, 0x80]),
        Buffer.from('"}'),
      ]),
      Buffer.concat([
        Buffer.from('{"eventType":"x","payload":{"a":"'),
        Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
        Buffer.from('"}}'),
      ]),
      Buffer.from([0xef, 0xbb, 0xbf, 0x7b, 0x7d]), // BOM + {}
      Buffer.from("\ufeff{}", "utf16le"),
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom<Body>(undefined, "", "   ", "\n") },
);

const CONTENT_TYPES = [
  "application/json; charset=utf-8",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "APPLICATION/JSON",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/jsonx",
  "application/json;;;",
  "*/*",
  "",
  " ",
  "application/json, text/plain",
  "application/vnd.api+json",
  'application/json; charset="x"',
  "json",
  "application/",
];
export const contentTypeArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant<string | undefined>("application/json") },
  { weight: 2, arbitrary: fc.constantFrom<string | undefined>(...CONTENT_TYPES, undefined) },
  { weight: 1, arbitrary: printable(60) },
);

export type AuthChoice = "admin" | "app" | "none" | { header: string };
export const authArb: fc.Arbitrary<AuthChoice> = fc.oneof(
  { weight: 8, arbitrary: fc.constant<AuthChoice>("admin") },
  { weight: 1, arbitrary: fc.constantFrom<AuthChoice>("app", "none") },
  { weight: 1, arbitrary: printable(300).map((s): AuthChoice => ({ header: s })) },
  { weight: 1, arbitrary: printable(300).map((s): AuthChoice => ({ header: `Bearer ${s}` })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom<AuthChoice>(
      { header: "Bearer hr_admin_" },
      { header: `Bearer ${"hr_admin_".padEnd(47, "0")}` },
    ),
  },
);

export const idempotencyArb = fc.option(
  fc.oneof(
    printable(40),
    fc.constantFrom("", " ", "a".repeat(256), "a".repeat(257), "a".repeat(5000)),
  ),
  { freq: 3 },
);
