/**
 * The routes' own body schemas, read from a built API, and what the fuzz tests generate
 * from them: values for the properties a schema cannot describe (URLs the test SSRF
 * allowlist takes, fixture ids, well-formed secrets, edge dates), and schema-shaped bodies
 * for the junk fuzz. A schema changed in src/api/routes changes what these send.
 */
import fc from "fast-check";
import { apiError } from "../../src/api/errors.ts";
import type { EgressConfig } from "../../src/config.ts";
import type { Pool } from "../../src/db/pool.ts";
import { NAME_CHARACTERS } from "../../src/names.ts";
import { PLACEHOLDER } from "./fuzz-fixtures.ts";
import { buildTestApi, testConfig } from "./harness.ts";
import { valueText } from "./junk-bodies.ts";
import { anyChar, pct } from "./junk-strings.ts";
import { discoverRoutes } from "./routes.ts";
import { invalidValue, type JsonSchema, validValue } from "./schema-arbitrary.ts";

/**
 * Every route's `schema.body`, the very object its route declared, keyed "METHOD /path"
 * as discoverRoutes names routes. Read through the `authenticate` option, which the API
 * calls first on every /api/v1 request with the matched route's options; it refuses the
 * request there, so no handler runs.
 */
export async function routeBodySchemas(pool: Pool): Promise<Map<string, JsonSchema>> {
  const seen = new Map<string, JsonSchema>();
  const api = await buildTestApi({
    pool,
    config: testConfig(),
    docs: false,
    authenticate: async (request) => {
      const body = request.routeOptions.schema?.body;
      if (body) seen.set(`${request.method} ${request.routeOptions.url}`, body as JsonSchema);
      throw apiError("unauthorized", "reading route schemas");
    },
  });
  try {
    await api.ready();
    for (const r of discoverRoutes(api)) {
      if (r.method === "HEAD" || !r.path.startsWith("/api/")) continue;
      await api.inject({ method: r.method as "POST", url: r.path.replace(/:\w+|\*/g, "x") });
    }
  } finally {
    await api.close();
  }
  return seen;
}

const nonNulChar = anyChar.filter((c) => c !== "\u0000");
const text = (maxLength: number) => fc.string({ unit: nonNulChar, maxLength });

/**
 * URLs the schemas take: mostly ones the test SSRF allowlist (127.0.0.0/8) lets through,
 * then every kind the endpoint checks refuse. (None with a NUL: the body check refuses it
 * before the schema is looked at, so a body wrong in one other way would not be a 422.)
 */
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
  "http://127.0.0.1:99999/",
  "http://%zz/",
  "http://localhost/",
  "http://[::ffff:127.0.0.1]/",
  "ftp://127.0.0.1/",
  "http://127.0.0.1:9/\r\nX: 1",
  "//127.0.0.1/",
  "http:/127.0.0.1",
];
const url = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.oneof(
      fc.constantFrom(
        "http://127.0.0.1:9/x",
        "https://127.0.0.1:9/",
        "http://127.0.0.2:65535/a?b=c#d",
        "http://127.1.2.3:9/",
      ),
      fc.tuple(text(40), text(40)).map(([a, b]) => `http://127.0.0.1:9/${pct(a)}?q=${pct(b)}`),
    ),
  },
  { weight: 2, arbitrary: fc.constantFrom(...URLS) },
);

/** Date-times RFC 3339 takes that JavaScript or PostgreSQL may not. */
const EDGE_DATES = [
  "2024-01-01T00:00:00Z",
  "2024-02-29T12:00:00.123456789+14:00",
  "0000-01-01T00:00:00Z",
  "0001-01-01T00:00:00Z",
  "2016-12-31T23:59:60Z",
  "2024-01-01T00:00:00-23:59",
  "9999-12-31T23:59:59Z",
  "1970-01-01T00:00:00-14:00",
];
const date = fc.oneof(
  fc
    .date({ noInvalidDate: true, min: new Date(0), max: new Date("2100-01-01T00:00:00Z") })
    .map((d) => d.toISOString()),
  fc.constantFrom(...EDGE_DATES),
);

/** A signing secret: 24-64 random bytes are accepted, 16-70 are tried. */
const secret = fc
  .integer({ min: 16, max: 70 })
  .chain((n) => fc.uint8Array({ minLength: n, maxLength: n }))
  .map((b) => `whsec_${Buffer.from(b).toString("base64")}`);

/**
 * An endpoint's OAuth2 settings (docs/oauth2.md): none, or whole ones with a token URL the
 * SSRF allowlist takes (random ones lack their required fields or a parsable URL: refused).
 */
const oauth2 = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.record(
      {
        tokenUrl: fc.constantFrom("http://127.0.0.1:9/token", "https://127.0.0.1:9/oauth/token"),
        clientId: fc.string({ minLength: 1, maxLength: 40 }),
        clientSecret: fc.string({ minLength: 4, maxLength: 60 }).filter((v) => v !== "***"),
        scope: fc.option(fc.string({ maxLength: 40 })),
        audience: fc.option(fc.string({ maxLength: 40 })),
        authMethod: fc.constantFrom("client_secret_basic", "client_secret_post"),
      },
      { requiredKeys: ["tokenUrl", "clientId", "clientSecret"] },
    ),
  },
);

/**
 * The egress the fuzzed server is given (docs/egress.md): one pool, so that a body naming
 * it can be taken. Its traffic would go out directly, but the fuzz delivers nothing.
 */
export const FUZZ_EGRESS_POOL = "fuzz-pool";
export const FUZZ_EGRESS: EgressConfig = {
  proxy: null,
  pools: {
    [FUZZ_EGRESS_POOL]: { proxy: null, localAddress: null, publicIps: [], description: "" },
  },
};

/**
 * An endpoint's or application's pool: none, or the one the fuzzed server has. (The
 * schema's own strings, mixed in by the generator, are pools it has not: unknown_egress_pool.)
 */
const egressPool = fc.constantFrom(null, FUZZ_EGRESS_POOL);

/**
 * An endpoint's own proxy: none, or one on loopback the test allowlist takes, with and
 * without a password. (The schema's own strings are refused: invalid_proxy_url.)
 */
const proxyUrl = fc.oneof(
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "http://127.0.0.1:9",
      "https://127.0.0.1:9",
      "socks5://127.0.0.1:1080",
      "http://fuzz:p%40ss@127.0.0.1:3128",
    ),
  },
);

/** Values for body properties by name (schema-valid; the generator's tests check that). */
export const BODY_HINTS: Record<string, fc.Arbitrary<unknown>> = {
  url,
  secret,
  oauth2,
  // egress (docs/egress.md): the schema's random strings are refused as a pool, a proxy
  // or PEM; certificates are none here (a pair would have to be drawn together)
  egressPool,
  proxyUrl,
  tlsClientCert: fc.constant(null),
  tlsClientKey: fc.constant(null),
  tlsCa: fc.constant(null),
  tokenUrl: fc.constantFrom("http://127.0.0.1:9/token", "https://127.0.0.1:9/oauth/token"),
  key: secret,
  deliverAt: date,
  // a replay's window must lie within the payload retention (30 days): mostly recent ones
  since: fc.oneof(
    { weight: 1, arbitrary: date },
    {
      weight: 2,
      arbitrary: fc
        .integer({ min: 60_000, max: 29 * 86_400_000 })
        .map((ago) => new Date(Date.now() - ago).toISOString()),
    },
  ),
  appId: fc.constantFrom(PLACEHOLDER.app, "no-such-app"),
  endpointId: fc.constantFrom(PLACEHOLDER.endpoint, "no-such-endpoint"),
  // any name, or the one send-example takes without a catalogue entry
  eventType: fc.oneof(
    fc.constant("hookrelay.ping"),
    fc.stringMatching(new RegExp(`^[${NAME_CHARACTERS}]{1,64}$`)),
  ),
  deliveryId: fc.constantFrom(
    PLACEHOLDER.delivery,
    "dlv_1",
    "1",
    "dlv_0",
    "dlv_99999999999999999999",
  ),
};

/** A valid body as JSON text with one member's value swapped for a junk JSON fragment. */
function withJunkMember(body: unknown, pick: number, junk: string): string {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return JSON.stringify(body);
  const entries = Object.entries(body);
  if (entries.length === 0) return JSON.stringify(body);
  const [victim] = entries[pick % entries.length]!;
  const members = entries.map(
    ([k, v]) => `${JSON.stringify(k)}:${k === victim ? junk : JSON.stringify(v)}`,
  );
  return `{${members.join(",")}}`;
}

/**
 * Bodies shaped by a route's schema, as JSON text: valid ones (most pass validation and
 * reach the handler and the database with unusual but acceptable values), ones wrong in
 * one way, and valid ones with one member's value replaced by junk JSON.
 */
export function shapedBody(schema: JsonSchema): fc.Arbitrary<string> {
  const valid = validValue(schema, { hints: BODY_HINTS });
  return fc.oneof(
    { weight: 3, arbitrary: valid.map((v) => JSON.stringify(v)) },
    {
      weight: 1,
      arbitrary: invalidValue(schema, { hints: BODY_HINTS }).map((i) => JSON.stringify(i.value)),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid, fc.nat(), valueText)
        .map(([body, pick, junk]) => withJunkMember(body, pick, junk)),
    },
  );
}
