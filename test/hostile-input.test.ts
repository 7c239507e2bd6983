/**
 * Hostile input (issue 5, "Hostile input"): generated junk thrown at every registered route
 * (bodies, headers, query strings, path parameters; huge numbers, deep JSON, NUL and lone
 * surrogates, invalid UTF-8, prototype-pollution keys) is always answered 2xx or 4xx,
 * never 5xx, never a crash; Object.prototype stays clean and the heap stays bounded. The
 * request body limit (1 MiB by default, configurable) is enforced before parsing.
 *
 * Real PostgreSQL (one cloned database); the API through inject(), and through a real port
 * for the body-limit tests that need a socket.
 */
import { randomBytes } from "node:crypto";
import net from "node:net";
import v8 from "node:v8";
import vm from "node:vm";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { silentLogger } from "../src/logger.ts";
import { buildTestApi, type Harness, startHarness, testConfig } from "./helpers/harness.ts";
import { discoverRoutes } from "./helpers/routes.ts";

const V1 = "/api/v1";

let h: Harness;

// ---------------------------------------------------------------------------------------
// fixtures the fuzzer can aim at (re-created when a DELETE removes them)

interface Fixtures {
  appId: string;
  appUid: string;
  endpointId: string;
  endpointUid: string;
  msgId: string;
  eventId: string;
  deliveryId: string;
  keyId: string;
  eventType: string;
}
let fx: Fixtures;

async function seed(): Promise<Fixtures> {
  const tag = randomBytes(4).toString("hex");
  const app = await h.call("POST", `${V1}/app`, { name: "fuzz", uid: `fuzz-${tag}` });
  const ep = await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, {
    url: "http://127.0.0.1:9/fuzz",
    uid: `fuzz-ep-${tag}`,
  });
  const msg = await h.call("POST", `${V1}/app/${app.body.id}/msg`, {
    eventType: "fuzz",
    eventId: `fuzz-evt-${tag}`,
    payload: { a: 1 },
  });
  const key = await h.call("POST", `${V1}/api-keys`, { role: "app", appId: app.body.id });
  const et = await h.call("PUT", `${V1}/event-type/fuzz.${tag}`, { description: "fuzz" });
  expect([app.status, ep.status, msg.status, key.status, et.status]).toEqual([
    201, 201, 202, 201, 201,
  ]);
  const { rows } = await h.db.pool.query("select id from deliveries where message_id = $1", [
    msg.body.id,
  ]);
  return {
    appId: app.body.id,
    appUid: app.body.uid,
    endpointId: ep.body.id,
    endpointUid: ep.body.uid,
    msgId: msg.body.id,
    eventId: `fuzz-evt-${tag}`,
    deliveryId: `dlv_${rows[0].id}`,
    keyId: key.body.id,
    eventType: `fuzz.${tag}`,
  };
}

/** The real values for a path parameter: the fuzzer picks one by index. */
function realValues(param: string): string[] {
  switch (param) {
    case "appId":
      return [fx.appId, fx.appUid];
    case "endpointId":
      return [fx.endpointId, fx.endpointUid];
    case "msgId":
      return [fx.msgId, fx.eventId];
    case "attemptId":
      return ["atmpt_1", "1"];
    case "deliveryId":
      return [fx.deliveryId];
    case "keyId":
      return [fx.keyId];
    case "name":
      return [fx.eventType];
    default:
      return ["static/index.html", "json"];
  }
}

// ---------------------------------------------------------------------------------------
// generators

const PRINTABLE = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i));
const printable = (maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...PRINTABLE, "\t"), maxLength });

/** Any code point, lone surrogates and NUL included. */
const anyChar = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)),
  },
  { weight: 1, arbitrary: fc.constant("\u0000") },
);

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
  "__proto__",
  "constructor",
  "prototype",
  "hasOwnProperty",
  "toString",
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

const junkString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: anyChar, maxLength: 30 }) },
  { weight: 3, arbitrary: fc.constantFrom(...SPECIAL) },
  { weight: 1, arbitrary: fc.string({ unit: anyChar, minLength: 200, maxLength: 3000 }) },
);

/** Percent-encodes the UTF-8 of a string (lone surrogates become U+FFFD, as on the wire). */
const pct = (s: string) =>
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

type ParamChoice = { real: number } | { text: string };
const paramArb: fc.Arbitrary<ParamChoice> = fc.oneof(
  { weight: 4, arbitrary: fc.nat(3).map((real) => ({ real })) },
  { weight: 3, arbitrary: junkString.map((s) => ({ text: pct(s) })) },
  { weight: 2, arbitrary: fc.constantFrom(...RAW_PATH_JUNK).map((text) => ({ text })) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 200, max: 3000 }).map((n) => ({ text: "a".repeat(n) })),
  },
);

const QUERY_KEYS = [
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
  "__proto__",
  "constructor",
  "prototype",
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
];
const queryArb = fc
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

const valueText = fc.oneof(
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

const POLLUTION_BODIES = [
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

type Body = string | Buffer | undefined;
const bodyArb: fc.Arbitrary<Body> = fc.oneof(
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
const contentTypeArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant<string | undefined>("application/json") },
  { weight: 2, arbitrary: fc.constantFrom<string | undefined>(...CONTENT_TYPES, undefined) },
  { weight: 1, arbitrary: printable(60) },
);

type AuthChoice = "admin" | "app" | "none" | { header: string };
const authArb: fc.Arbitrary<AuthChoice> = fc.oneof(
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

const idempotencyArb = fc.option(
  fc.oneof(
    printable(40),
    fc.constantFrom("", " ", "a".repeat(256), "a".repeat(257), "a".repeat(5000)),
  ),
  { freq: 3 },
);

interface Attempt {
  route: { method: string; path: string };
  params: ParamChoice[];
  query: string;
  body: Body;
  contentType: string | undefined;
  auth: AuthChoice;
  idempotency: string | null;
}

let routes: { method: string; path: string }[] = [];
let appKey = "";

// Schema-shaped bodies: the route's own fields, each usually valid and sometimes junk, so
// that many requests pass validation and reach the handlers and the database with unusual
// but acceptable values (unicode names, extreme integers within range, odd URLs...).
// "@@APP@@", "@@EP@@" and "@@DLV@@" are replaced by the current fixtures when sent.
const nonNulChar = anyChar.filter((c) => c !== "\u0000");
const text = (minLength: number, maxLength: number) =>
  fc.string({ unit: nonNulChar, minLength, maxLength });
const json = <T>(a: fc.Arbitrary<T>) => a.map((v) => JSON.stringify(v));
const NAME = /^[a-zA-Z0-9\-_.]{1,30}$/;
const names = (maxLength: number) => fc.uniqueArray(fc.stringMatching(NAME), { maxLength });
const int = (min: number, max: number) =>
  fc.oneof(fc.constantFrom(min, max), fc.integer({ min, max }));
const nullable = <T>(a: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 4, arbitrary: a }, { weight: 1, arbitrary: fc.constant(null) });
const dict = (key: fc.Arbitrary<string>, value: fc.Arbitrary<string>, maxKeys: number) =>
  fc
    .uniqueArray(fc.tuple(key, value), { maxLength: maxKeys, selector: ([k]) => k })
    .map((pairs) => Object.fromEntries(pairs));
const HEADER_NAME = /^X-[A-Za-z0-9-]{1,20}$/;
const URLS = [
  "http://127.0.0.1:9/x",
  "http://127.0.0.1:9/x?cid=1&email=a@b.co",
  "https://127.0.0.1:9/",
  "http://[::1]/",
  "http://0x7f.1/",
  "http://2130706433/",
  "http://169.254.169.254/latest",
  "http://10.0.0.1/",
  "file:///etc/passwd",
  "javascript:alert(1)",
  "http://user:pw@127.0.0.1:9/",
  `http://127.0.0.1:9/${"a".repeat(2100)}`,
  "http://127.0.0.1:99999/",
  "http://%zz/",
  "http://localhost/",
  "http://[::ffff:127.0.0.1]/",
  "ftp://127.0.0.1/",
  "http://127.0.0.1:9/\u0000",
  "http://127.0.0.1:9/\r\nX: 1",
  "//127.0.0.1/",
  "http:/127.0.0.1",
  "",
];
const validUrl = fc.oneof(
  fc.constantFrom(
    "http://127.0.0.1:9/x",
    "https://127.0.0.1:9/",
    "http://127.0.0.2:65535/a?b=c#d",
    "http://[::1]:9/",
  ),
  fc.tuple(text(0, 40), text(0, 40)).map(([a, b]) => `http://127.0.0.1:9/${pct(a)}?q=${pct(b)}`),
);
const DATES = [
  "2024-01-01T00:00:00Z",
  "2024-02-29T12:00:00.123456789+14:00",
  "2024-02-30T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "0001-01-01T00:00:00Z",
  "2016-12-31T23:59:60Z",
  "2024-01-01T00:00:00-23:59",
  "9999-12-31T23:59:59Z",
  "1970-01-01T00:00:00-14:00",
  "2024-01-01T24:00:00Z",
  "275760-09-13T00:00:00.000Z",
  "not a date",
];
const validDate = fc
  .date({ noInvalidDate: true, min: new Date(0), max: new Date("2100-01-01T00:00:00Z") })
  .map((d) => d.toISOString());
const objectValue = fc
  .jsonValue({ maxDepth: 3 })
  .map((v) => (typeof v === "object" && v !== null && !Array.isArray(v) ? v : { v }));

/** One field: valid JSON text most of the time, junk sometimes. */
const field = (valid: fc.Arbitrary<unknown>, junk: fc.Arbitrary<string> = valueText) =>
  fc.oneof({ weight: 5, arbitrary: json(valid) }, { weight: 1, arbitrary: junk });

interface FieldSpec {
  required?: boolean;
  value: fc.Arbitrary<string>;
}
const req = (value: fc.Arbitrary<string>): FieldSpec => ({ required: true, value });
const opt = (value: fc.Arbitrary<string>): FieldSpec => ({ value });

const metadata = opt(field(dict(text(1, 20), text(0, 40), 5)));
const appFields = (nameRequired: boolean): Record<string, FieldSpec> => ({
  name: { required: nameRequired, value: field(text(1, 80)) },
  uid: opt(field(nullable(fc.stringMatching(NAME)))),
  metadata,
  rateLimit: opt(field(nullable(int(1, 1_000_000)))),
  throttleRate: opt(field(nullable(int(1, 1_000_000)))),
});
const endpointFields = (urlRequired: boolean): Record<string, FieldSpec> => ({
  url: {
    required: urlRequired,
    value: fc.oneof(
      { weight: 5, arbitrary: json(validUrl) },
      { weight: 2, arbitrary: json(fc.constantFrom(...URLS)) },
    ),
  },
  description: opt(field(text(0, 100))),
  eventTypes: opt(field(nullable(names(5)))),
  filterTypes: opt(field(nullable(names(5)))),
  channels: opt(field(nullable(names(5)))),
  disabled: opt(field(fc.boolean())),
  headers: opt(
    field(
      nullable(
        dict(
          fc.stringMatching(HEADER_NAME),
          fc.string({ unit: fc.constantFrom(...PRINTABLE), maxLength: 40 }),
          4,
        ),
      ),
    ),
  ),
  uid: opt(field(nullable(fc.stringMatching(NAME)))),
  metadata,
  maxAttempts: opt(field(nullable(int(1, 100)))),
  timeoutMs: opt(field(nullable(int(100, 300_000)))),
  retryBaseMs: opt(field(nullable(int(0, 86_400_000)))),
  retryCapMs: opt(field(nullable(int(0, 604_800_000)))),
  maxInFlight: opt(field(nullable(int(1, 10_000)))),
  failureThreshold: opt(field(nullable(int(1, 10_000)))),
  cooldownMs: opt(field(nullable(int(1_000, 86_400_000)))),
  ratePerSecond: opt(field(nullable(int(1, 1_000_000)))),
  ratePerMinute: opt(field(nullable(int(1, 60_000_000)))),
  ratePerHour: opt(field(nullable(int(1, 1_000_000_000)))),
});
const eventTypeFields = (withName: boolean): Record<string, FieldSpec> => ({
  ...(withName && { name: req(field(fc.stringMatching(NAME))) }),
  description: { required: true, value: field(text(0, 100)) },
  archived: opt(field(fc.boolean())),
  deprecated: opt(field(fc.boolean())),
  schemas: opt(field(nullable(objectValue))),
  groupName: opt(field(nullable(text(0, 40)))),
  featureFlags: opt(field(nullable(names(5)))),
});
const secret = (min: number, max: number) =>
  fc.integer({ min, max }).map((n) => `whsec_${randomBytes(n).toString("base64")}`);

const BODY_FIELDS: Record<string, Record<string, FieldSpec>> = {
  [`POST ${V1}/app`]: appFields(true),
  [`PUT ${V1}/app/:appId`]: appFields(true),
  [`PATCH ${V1}/app/:appId`]: appFields(false),
  [`POST ${V1}/app/:appId/endpoint`]: {
    ...endpointFields(true),
    secret: opt(field(nullable(secret(24, 64)), json(secret(16, 70)))),
  },
  [`PUT ${V1}/app/:appId/endpoint/:endpointId`]: endpointFields(true),
  [`PATCH ${V1}/app/:appId/endpoint/:endpointId`]: endpointFields(false),
  [`POST ${V1}/app/:appId/endpoint/:endpointId/secret/rotate`]: {
    key: opt(field(nullable(secret(24, 64)), json(secret(16, 70)))),
    gracePeriodSeconds: opt(field(nullable(int(0, 7 * 86_400)))),
  },
  [`POST ${V1}/app/:appId/msg`]: {
    eventType: req(field(fc.stringMatching(NAME))),
    payload: req(field(objectValue, fc.constantFrom(...SPECIAL_JSON))),
    eventId: opt(field(nullable(text(1, 60)))),
    channels: opt(field(nullable(names(10)))),
    tags: opt(field(nullable(names(10)))),
    deliverAt: opt(field(nullable(validDate), json(fc.constantFrom(...DATES)))),
    application: opt(field(nullable(fc.record({ name: text(1, 40) })))),
  },
  [`POST ${V1}/dead-letters/requeue`]: {
    since: opt(field(validDate, json(fc.constantFrom(...DATES)))),
    deliveryId: opt(
      field(fc.constantFrom("@@DLV@@", "dlv_1", "1", "dlv_0", "dlv_99999999999999999999")),
    ),
    endpointId: opt(field(fc.constantFrom("@@EP@@", "no-such-endpoint"))),
    appId: opt(field(fc.constantFrom("@@APP@@", "no-such-app"))),
    includeFailed: opt(field(fc.boolean())),
  },
  [`POST ${V1}/operations/purge`]: {
    budgetMs: opt(field(int(100, 60_000))),
  },
  [`POST ${V1}/operations/reencrypt-secrets`]: {
    after: opt(field(int(0, 1_000_000))),
    budgetMs: opt(field(int(100, 60_000))),
  },
  [`POST ${V1}/api-keys`]: {
    role: req(field(fc.constantFrom("app", "admin"))),
    appId: opt(field(fc.constantFrom("@@APP@@", "no-such-app"))),
    name: opt(field(text(0, 60))),
  },
  [`POST ${V1}/event-type`]: eventTypeFields(true),
  [`PUT ${V1}/event-type/:name`]: eventTypeFields(false),
  [`PATCH ${V1}/event-type/:name`]: eventTypeFields(false),
};

/** A body of the route's fields: required ones usually present, optional ones sometimes. */
function shapedBody(route: { method: string; path: string }): fc.Arbitrary<Body> | null {
  const fields = BODY_FIELDS[`${route.method} ${route.path}`];
  if (!fields) return null;
  const parts = Object.entries(fields).map(([name, spec]) =>
    fc
      .option(spec.value, { freq: spec.required ? 12 : 2, nil: null })
      .map((v) => (v === null ? null : `${JSON.stringify(name)}:${v}`)),
  );
  return fc.tuple(...parts).map((ps) => `{${ps.filter((x) => x !== null).join(",")}}`);
}

/**
 * Half the requests are junk in every part; the other half are well-formed around junk
 * values (real ids, JSON, the admin key, a schema-shaped body), so they reach the handlers.
 */
function attemptArb(): fc.Arbitrary<Attempt> {
  return fc.constantFrom(...routes).chain((route) => {
    const shaped = shapedBody(route);
    const junk = fc.record({
      route: fc.constant(route),
      params: fc.array(paramArb, { minLength: 4, maxLength: 4 }),
      query: fc.oneof(
        { weight: 1, arbitrary: fc.constant("") },
        { weight: 2, arbitrary: queryArb },
      ),
      body: shaped
        ? fc.oneof({ weight: 1, arbitrary: shaped }, { weight: 2, arbitrary: bodyArb })
        : bodyArb,
      contentType: contentTypeArb,
      auth: authArb,
      idempotency: idempotencyArb,
    });
    const wellFormed = fc.record({
      route: fc.constant(route),
      params: fc.array(
        fc.nat(3).map((real): ParamChoice => ({ real })),
        { minLength: 4, maxLength: 4 },
      ),
      query: fc.oneof(
        { weight: 3, arbitrary: fc.constant("") },
        { weight: 1, arbitrary: queryArb },
      ),
      body: shaped ?? fc.constant<Body>(undefined),
      contentType: fc.constant<string | undefined>("application/json"),
      auth: fc.constantFrom<AuthChoice>("admin", "admin", "admin", "app"),
      idempotency: fc.option(fc.uuid(), { freq: 4 }),
    });
    return fc.oneof(junk, wellFormed);
  });
}

function urlOf(a: Attempt): string {
  let i = 0;
  const path = a.route.path.replace(/:(\w+)|\*/g, (_, name: string | undefined) => {
    const choice = a.params[i++ % a.params.length]!;
    if ("text" in choice) return choice.text;
    const real = realValues(name ?? "*");
    return encodeURIComponent(real[choice.real % real.length]!);
  });
  return a.query ? `${path}?${a.query}` : path;
}

const stats = {
  requests: 0,
  byStatus: new Map<number, number>(),
  routesHit: new Set<string>(),
  routesOk: new Set<string>(),
};

/** Sends one generated request; checks the answer is 2xx/4xx and well formed. */
async function fire(a: Attempt): Promise<void> {
  const headers: Record<string, string> = {};
  if (a.auth === "admin") headers.authorization = `Bearer ${h.adminKey}`;
  else if (a.auth === "app") headers.authorization = `Bearer ${appKey}`;
  else if (typeof a.auth === "object") headers.authorization = a.auth.header;
  if (a.contentType !== undefined) headers["content-type"] = a.contentType;
  if (a.idempotency !== null) headers["idempotency-key"] = a.idempotency;
  const url = urlOf(a);
  const payload =
    typeof a.body === "string"
      ? a.body
          .replaceAll("@@APP@@", fx.appId)
          .replaceAll("@@EP@@", fx.endpointId)
          .replaceAll("@@DLV@@", fx.deliveryId)
      : a.body;
  const res = await h.api.inject({ method: a.route.method as "GET", url, headers, payload });
  stats.requests++;
  stats.byStatus.set(res.statusCode, (stats.byStatus.get(res.statusCode) ?? 0) + 1);
  stats.routesHit.add(`${a.route.method} ${a.route.path}`);
  if (res.statusCode < 300) stats.routesOk.add(`${a.route.method} ${a.route.path}`);
  const what = `${a.route.method} ${url.slice(0, 300)} → ${res.statusCode} ${res.body.slice(0, 300)}`;
  expect(res.statusCode, what).toBeGreaterThanOrEqual(200);
  expect(res.statusCode, what).toBeLessThan(500);
  if (a.route.method !== "HEAD" && url.startsWith(V1) && res.statusCode >= 400) {
    expect(JSON.parse(res.body), what).toEqual({
      code: expect.any(String),
      detail: expect.any(String),
    });
  }
  if (
    a.route.method !== "HEAD" &&
    String(res.headers["content-type"] ?? "").startsWith("application/json") &&
    res.body
  ) {
    expect(() => JSON.parse(res.body), what).not.toThrow();
  }
  // a DELETE that worked may have removed the fixtures: re-create them
  if (a.route.method === "DELETE" && res.statusCode < 300) fx = await seed();
}

const protoNames = () => ({
  object: Object.getOwnPropertyNames(Object.prototype).sort(),
  array: Object.getOwnPropertyNames(Array.prototype).sort(),
  func: Object.getOwnPropertyNames(Function.prototype).sort(),
});

let gc: () => void = () => undefined;
const uncaught: unknown[] = [];
const onUncaught = (err: unknown) => void uncaught.push(err);

beforeAll(async () => {
  v8.setFlagsFromString("--expose-gc");
  gc = vm.runInNewContext("gc") as () => void;
  process.on("uncaughtException", onUncaught);
  process.on("unhandledRejection", onUncaught);
  h = await startHarness();
  await h.api.ready();
  routes = discoverRoutes(h.api);
  expect(routes.length).toBeGreaterThan(50);
  fx = await seed();
  appKey = (await h.call("POST", `${V1}/api-keys`, { role: "app", appId: fx.appId })).body.key;
});
afterAll(async () => {
  process.off("uncaughtException", onUncaught);
  process.off("unhandledRejection", onUncaught);
  await h?.close();
});

// =======================================================================================

describe("junk at every route", () => {
  const before = protoNames();
  let heapBefore = 0;

  test("property: every generated request gets a 2xx or 4xx, never a 5xx", async () => {
    gc();
    heapBefore = process.memoryUsage().heapUsed;
    await fc.assert(fc.asyncProperty(attemptArb(), fire), { numRuns: 1_500, endOnFailure: true });
  });

  test("every route was hit, with real and junk parameters", () => {
    expect(stats.requests).toBeGreaterThanOrEqual(1_500);
    // plenty of answers got past validation to the handlers
    const ok = [...stats.byStatus].filter(([s]) => s < 300).reduce((n, [, c]) => n + c, 0);
    expect(ok).toBeGreaterThan(250);
    expect(routes.filter((r) => !stats.routesHit.has(`${r.method} ${r.path}`))).toEqual([]);
    // most routes answered 2xx at least once: the junk reached their handlers
    expect(stats.routesOk.size).toBeGreaterThan(routes.length * 0.75);
  });

  test("a few thousand more requests: the heap stays bounded", async () => {
    const batch = fc.sample(attemptArb(), { numRuns: 1_500, seed: 42 });
    for (const a of batch) await fire(a);
    gc();
    const growth = process.memoryUsage().heapUsed - heapBefore;
    expect(
      growth,
      `heap grew by ${Math.round(growth / 1e6)} MB over ${stats.requests} requests`,
    ).toBeLessThan(200 * 1024 * 1024);
  });

  test("no prototype was polluted, nothing crashed, the API still answers", async () => {
    expect(protoNames()).toEqual(before);
    expect(({} as Record<string, unknown>).hrPolluted).toBeUndefined();
    expect(Object.prototype.toString.call([])).toBe("[object Array]");
    expect(uncaught).toEqual([]);
    expect((await h.api.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    expect((await h.call("GET", `${V1}/app?limit=1`)).status).toBe(200);
    // no connection left checked out
    expect(h.db.pool.waitingCount).toBe(0);
  });
});

describe("targeted junk", () => {
  test("prototype-pollution keys are refused outside the payload and kept as data inside it", async () => {
    for (const body of POLLUTION_BODIES.slice(0, 3)) {
      const res = await h.call("POST", `${V1}/app`, body);
      expect(res.status, body).toBe(400);
      expect(res.body.code).toBe("invalid_json");
    }
    expect(({} as Record<string, unknown>).hrPolluted).toBeUndefined();
  });

  test("huge numbers, NUL and lone surrogates in fields: 4xx; in the payload: stored exactly", async () => {
    for (const limit of [
      "99999999999999999999",
      "-1",
      "1.5",
      "250.0000000000001",
      "1e3",
      "2e2.5",
    ]) {
      const res = await h.call("GET", `${V1}/app?limit=${limit}`);
      expect(res.status, limit).toBeGreaterThanOrEqual(400);
      expect(res.status, limit).toBeLessThan(500);
    }
    for (const name of ['"a\\u0000b"', "1e999999", '"\\ud800"']) {
      const res = await h.call("POST", `${V1}/app`, `{"name":${name}}`);
      expect(res.status, name).toBeLessThan(500);
    }
    expect((await h.call("POST", `${V1}/app`, '{"name":"a\\u0000b"}')).status).toBe(400);
    // infinite numbers in bodies fail the (non-coercing) schema
    const ep = `${V1}/app/${fx.appId}/endpoint/${fx.endpointId}`;
    for (const [url, body] of [
      [`${V1}/app`, '{"name":"x","rateLimit":1e999}'],
      [`${ep}/secret/rotate`, '{"gracePeriodSeconds":1e999}'],
      [`${ep}/secret/rotate`, '{"gracePeriodSeconds":-1e999}'],
      [`${V1}/app/${fx.appId}/endpoint`, '{"url":"http://127.0.0.1:9/","maxAttempts":1e999}'],
    ] as const) {
      expect((await h.call("POST", url, body)).status, body).toBe(422);
    }
    const payload =
      '{"n":123456789012345678901234567890,"e":1e999,"z":"\\u0000","s":"\\ud800","k":-0}';
    const sent = await h.call(
      "POST",
      `${V1}/app/${fx.appId}/msg`,
      `{"eventType":"raw","payload":${payload}}`,
    );
    expect(sent.status).toBe(202);
    const { rows } = await h.db.pool.query("select payload from messages where id = $1", [
      sent.body.id,
    ]);
    expect(rows[0].payload).toBe(payload);
  });

  // Regression (fixed in bddc362): the NUL check walked the parsed body recursively, so a
  // body nested ~3k levels deep outside the payload (~100k once V8 had optimized the walk)
  // overflowed the stack: RangeError → 500. Now an iterative walk refuses depth > 64.
  test("deep JSON (10k-100k levels) outside the payload is a 4xx on every route that takes a body", async () => {
    const deep = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    const writes = routes.filter((r) => ["POST", "PUT", "PATCH"].includes(r.method));
    expect(writes.length).toBeGreaterThan(10);
    const failures: string[] = [];
    for (const r of writes) {
      const url = r.path.replace(/:(\w+)/g, (_, p: string) =>
        encodeURIComponent(realValues(p)[0]!),
      );
      for (const body of [
        `{"name":${deep(10_000)}}`,
        `{"eventType":"x","payload":{},"tags":${deep(10_000)}}`,
        deep(10_000),
        // once V8 has optimized the walk 10k levels may fit on the stack; 100k never do
        `{"name":${deep(100_000)}}`,
        deep(100_000),
      ]) {
        const res = await h.api.inject({
          method: r.method as "POST",
          url,
          headers: { authorization: `Bearer ${h.adminKey}`, "content-type": "application/json" },
          payload: body,
        });
        if (res.statusCode < 400 || res.statusCode >= 500)
          failures.push(`${r.method} ${r.path} → ${res.statusCode}`);
      }
    }
    expect(failures).toEqual([]);
  });
});

// =======================================================================================

// Regression (fixed in bddc362): dates that pass the date-time format but not PostgreSQL
// or JavaScript answered 500: year 0000 and offsets beyond ±15:59 in ?before=/?after= (the
// raw string went to SQL), a leap second (23:59:60Z) in deliverAt, requeue `since` and
// dead-letter since/until (Invalid Date). Now parsed once, years 1-9999, 400 otherwise.
test("edge dates in query strings and bodies are a 4xx, not a 500", async () => {
  const failures: string[] = [];
  const check = async (method: string, url: string, body?: unknown) => {
    const res = await h.call(method, url, body);
    if (res.status >= 500)
      failures.push(
        `${method} ${decodeURIComponent(url)} ${body ? JSON.stringify(body) : ""} → ${res.status}`,
      );
  };
  for (const d of [
    "0000-01-01T00:00:00Z",
    "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "2016-12-31T23:59:60Z",
    "2024-01-01T00:00:00-23:59",
    "2024-02-29T00:00:00Z",
  ]) {
    const q = encodeURIComponent(d);
    await check("GET", `${V1}/app/${fx.appId}/msg?before=${q}`);
    await check("GET", `${V1}/app/${fx.appId}/msg?after=${q}`);
    await check("GET", `${V1}/app/${fx.appId}/endpoint/${fx.endpointId}/msg?before=${q}`);
    await check("GET", `${V1}/app/${fx.appId}/endpoint/${fx.endpointId}/msg?after=${q}`);
    await check("GET", `${V1}/dead-letters?since=${q}`);
    await check("GET", `${V1}/dead-letters?until=${q}`);
    await check("GET", `${V1}/dead-letters/analysis?since=${q}`);
    await check("POST", `${V1}/app/${fx.appId}/msg`, {
      eventType: "when",
      payload: {},
      deliverAt: d,
    });
    await check("POST", `${V1}/dead-letters/requeue`, { since: d });
  }
  expect(failures).toEqual([]);
});

// Regression (fixed in bddc362; found by the property test above): a lone surrogate in
// `metadata` (jsonb) made PostgreSQL refuse the JSON.stringify'd \ud800 escape: 500. Now
// strings outside the payload must be well-formed UTF-16 (400).
test("lone surrogates in metadata (a jsonb column) are a 4xx, not a 500", async () => {
  const ep = `${V1}/app/${fx.appId}/endpoint`;
  const cases: [string, string, string][] = [
    ["POST", `${V1}/app`, '{"name":"x","metadata":{"k":"\\ud800"}}'],
    ["POST", `${V1}/app`, '{"name":"x","metadata":{"\\udfff":"v"}}'],
    ["PATCH", `${V1}/app/${fx.appId}`, '{"metadata":{"k":"a\\udc00b"}}'],
    ["POST", ep, '{"url":"http://127.0.0.1:9/x","metadata":{"k":"\\ud800"}}'],
    ["PATCH", `${ep}/${fx.endpointId}`, '{"metadata":{"k":"\\ud800"}}'],
  ];
  const failures: string[] = [];
  for (const [method, url, body] of cases) {
    const res = await h.call(method, url, body);
    if (res.status !== 400) failures.push(`${method} ${url} ${body} → ${res.status}`);
  }
  expect(failures).toEqual([]);
});

// Regression (fixed in bddc362): the coercing Ajv turned "1e999"/"-1e400"/"Infinity" into
// ±Infinity and then skipped minimum/maximum, so ?limit=1e999 reached SQL as
// `limit 'Infinity'::integer`: 500 on every listing (and /dead-letters?status_code=).
test("infinite numbers in query strings are a 4xx on every listing", async () => {
  const failures: string[] = [];
  let refused = 0;
  for (const r of routes.filter((x) => x.method === "GET" && x.path.startsWith(V1))) {
    const path = r.path.replace(/:(\w+)/g, (_, p: string) => encodeURIComponent(realValues(p)[0]!));
    for (const q of ["limit=1e999", "limit=-1e400", "limit=Infinity", "status_code=1e999"]) {
      const res = await h.api.inject({
        method: "GET",
        url: `${path}?${q}`,
        headers: { authorization: `Bearer ${h.adminKey}` },
      });
      if (res.statusCode >= 500) failures.push(`GET ${r.path}?${q} → ${res.statusCode}`);
      if (res.statusCode >= 400) refused++;
    }
  }
  expect(failures).toEqual([]);
  // every listing declares limit; the routes without it ignore the parameter
  expect(refused).toBeGreaterThan(25);
});

describe("request body limit", () => {
  const MiB = 1024 * 1024;
  const jsonOf = (bytes: number) => `{"name":"${"x".repeat(bytes - 11)}"}`;

  test("over 1 MiB by default: 413 payload_too_large, before the body is parsed", async () => {
    expect(jsonOf(MiB + 1)).toHaveLength(MiB + 1);
    const big = await h.call("POST", `${V1}/app`, jsonOf(MiB + 1));
    expect(big.status).toBe(413);
    expect(big.body.code).toBe("payload_too_large");
    // not JSON at all: still 413, so no parser saw it
    const junk = await h.call("POST", `${V1}/app`, "{".repeat(MiB + 10));
    expect(junk.status).toBe(413);
    const payload = await h.call(
      "POST",
      `${V1}/app/${fx.appId}/msg`,
      `{"eventType":"big","payload":{"x":"${"y".repeat(MiB)}"}}`,
    );
    expect(payload.status).toBe(413);
    // exactly at the limit: parsed (and refused by validation for a name this long)
    const at = await h.call("POST", `${V1}/app`, jsonOf(MiB));
    expect(at.status).toBe(422);
  });

  test("the limit answers from the Content-Length header alone, and cuts a chunked body off", async () => {
    await h.api.listen({ port: 0, host: "127.0.0.1" });
    const { port } = h.api.server.address() as net.AddressInfo;
    const head = (extra: string) =>
      `POST ${V1}/app HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.adminKey}\r\nContent-Type: application/json\r\n${extra}\r\n`;

    // 5 MiB announced, not one body byte sent: the answer comes anyway
    const announced = await rawExchange(port, (s) => s.write(head("Content-Length: 5242880\r\n")));
    expect(announced).toMatch(/^HTTP\/1\.1 413 /);

    // chunked, no length: cut off once past the limit
    const chunked = await rawExchange(port, (s) => {
      s.write(head("Transfer-Encoding: chunked\r\n"));
      const chunk = "x".repeat(64 * 1024);
      for (let i = 0; i < 20; i++) s.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    });
    expect(chunked).toMatch(/^HTTP\/1\.1 413 /);
  });

  test("a configured smaller limit (HOOKRELAY_BODY_LIMIT_BYTES) is enforced the same way", async () => {
    const small = await buildTestApi({
      pool: h.db.pool,
      config: testConfig({ databaseUrl: h.db.url, bodyLimitBytes: 2048 }),
      logger: silentLogger,
    });
    try {
      const post = (payload: string) =>
        small.inject({
          method: "POST",
          url: `${V1}/app`,
          headers: { authorization: `Bearer ${h.adminKey}`, "content-type": "application/json" },
          payload,
        });
      expect((await post(jsonOf(2049))).statusCode).toBe(413);
      expect((await post("{".repeat(3000))).statusCode).toBe(413);
      expect((await post(jsonOf(2048))).statusCode).toBe(422);
      expect((await post('{"name":"small enough"}')).statusCode).toBe(201);
    } finally {
      await small.close();
    }
  });
});

/** Opens a socket, lets `send` write, returns what the server answers within 5 s. */
function rawExchange(port: number, send: (s: net.Socket) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let data = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(data);
    }, 5_000);
    socket.on("connect", () => send(socket));
    socket.on("data", (d) => {
      data += d.toString("latin1");
      if (/\r\n\r\n/.test(data)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(data);
      }
    });
    socket.on("error", (err) => {
      clearTimeout(timer);
      if (data) resolve(data);
      else if (
        (err as { code?: string }).code === "ECONNRESET" ||
        (err as { code?: string }).code === "EPIPE"
      )
        resolve(data);
      else reject(err);
    });
  });
}
