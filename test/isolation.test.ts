/**
 * Tenant isolation (issue 5, "API keys and tenants"): with app A's key, every read and
 * write on app B's applications, endpoints, messages, attempts, secrets, dead letters,
 * health and requeue answers 404 (never 403: existence is not revealed), exactly as if
 * the resource did not exist.
 *
 * The routes are discovered from Fastify's own route tree (printRoutes, which includes
 * routes hidden from the OpenAPI document) and must equal the classification table below:
 * a route added without a decision about its tenant scoping fails the first test.
 *
 * Real PostgreSQL (one cloned database), in-process API through inject(), a real worker
 * and receiver on 127.0.0.1 to create genuine attempts, dead letters and open circuits.
 */
import { randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type CallResult, type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import { discoverRoutes } from "./helpers/routes.ts";

const V1 = "/api/v1";

// ---------------------------------------------------------------------------------------
// route discovery

/** Every registered route as "METHOD /path", sorted and without repeats. */
function discoveredRoutes(app: FastifyInstance): string[] {
  return [...new Set(discoverRoutes(app).map((r) => `${r.method} ${r.path}`))].sort();
}

// ---------------------------------------------------------------------------------------
// the classification table

/**
 * app       the path names an app (and maybe its endpoint/message/attempt): another
 *           app's → 404, identical to a resource that does not exist
 * delivery  /deliveries/{deliveryId}: another app's delivery → 404
 * admin     admin-only, no app in the path: an app key → 403
 * list      listings across apps: an app key sees its own app's rows only
 * requeue   acts on rows chosen by the body: limited to the key's app
 * catalogue global, not tenant data (event types): any key reads, admin writes
 * public    no authentication (docs, liveness, metrics)
 */
type Kind = "app" | "delivery" | "admin" | "list" | "requeue" | "catalogue" | "public";

interface Fixture {
  rx: string;
  appB: string;
}

interface Rule {
  kind: Kind;
  /** a plausible valid body, so the answer is about scoping, not validation */
  body?: (f: Fixture) => unknown;
}

const TABLE: [methods: string, path: string, rule: Rule][] = [
  // public
  ["GET HEAD", "/docs", { kind: "public" }],
  ["GET HEAD", "/docs/", { kind: "public" }],
  ["GET HEAD", "/docs/*", { kind: "public" }],
  ["GET HEAD", "/docs/json", { kind: "public" }],
  ["GET HEAD", "/docs/yaml", { kind: "public" }],
  ["GET HEAD", "/docs/static/index.html", { kind: "public" }],
  ["GET HEAD", "/docs/static/swagger-initializer.js", { kind: "public" }],
  ["GET HEAD", "/healthz", { kind: "public" }],
  ["GET HEAD", "/metrics", { kind: "public" }],
  // applications
  ["GET HEAD", `${V1}/app`, { kind: "list" }],
  ["POST", `${V1}/app`, { kind: "admin", body: () => ({ name: "made by an app key" }) }],
  ["GET HEAD DELETE", `${V1}/app/:appId`, { kind: "app" }],
  ["PUT", `${V1}/app/:appId`, { kind: "app", body: () => ({ name: "replaced by A" }) }],
  ["PATCH", `${V1}/app/:appId`, { kind: "app", body: () => ({ name: "patched by A" }) }],
  // endpoints
  ["GET HEAD", `${V1}/app/:appId/endpoint`, { kind: "app" }],
  [
    "POST",
    `${V1}/app/:appId/endpoint`,
    { kind: "app", body: (f) => ({ url: `${f.rx}/planted-by-a` }) },
  ],
  ["GET HEAD DELETE", `${V1}/app/:appId/endpoint/:endpointId`, { kind: "app" }],
  [
    "PUT",
    `${V1}/app/:appId/endpoint/:endpointId`,
    { kind: "app", body: (f) => ({ url: `${f.rx}/hijacked-by-a` }) },
  ],
  [
    "PATCH",
    `${V1}/app/:appId/endpoint/:endpointId`,
    { kind: "app", body: (f) => ({ url: `${f.rx}/hijacked-by-a` }) },
  ],
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/secret`, { kind: "app" }],
  [
    "POST",
    `${V1}/app/:appId/endpoint/:endpointId/secret/rotate`,
    { kind: "app", body: () => ({ gracePeriodSeconds: 0 }) },
  ],
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/msg`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/health`, { kind: "app" }],
  ["POST", `${V1}/app/:appId/endpoint/:endpointId/circuit/reset`, { kind: "app" }],
  // messages and attempts
  ["GET HEAD", `${V1}/app/:appId/msg`, { kind: "app" }],
  [
    "POST",
    `${V1}/app/:appId/msg`,
    { kind: "app", body: () => ({ eventType: "iso.probe", payload: { from: "A" } }) },
  ],
  ["GET HEAD", `${V1}/app/:appId/msg/:msgId`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/msg/:msgId/attempt/:attemptId`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/msg/:msgId/endpoint`, { kind: "app" }],
  ["POST", `${V1}/app/:appId/msg/:msgId/endpoint/:endpointId/resend`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/attempt/msg/:msgId`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/attempt/endpoint/:endpointId`, { kind: "app" }],
  // operations
  ["GET HEAD", `${V1}/health/endpoints`, { kind: "list" }],
  ["GET HEAD", `${V1}/health/summary`, { kind: "list" }],
  ["GET HEAD", `${V1}/alerts`, { kind: "list" }],
  ["GET HEAD", `${V1}/dead-letters`, { kind: "list" }],
  ["GET HEAD", `${V1}/dead-letters/analysis`, { kind: "list" }],
  [
    "POST",
    `${V1}/dead-letters/requeue`,
    { kind: "requeue", body: () => ({ since: "2000-01-01T00:00:00Z" }) },
  ],
  ["POST", `${V1}/deliveries/:deliveryId/cancel`, { kind: "delivery" }],
  ["GET HEAD", `${V1}/dead-letters/requeue-plan`, { kind: "list" }],
  // maintenance jobs
  ["POST", `${V1}/operations/purge`, { kind: "admin", body: () => ({ budgetMs: 100 }) }],
  ["POST", `${V1}/operations/reencrypt-secrets`, { kind: "admin", body: () => ({}) }],
  // API keys
  ["GET HEAD", `${V1}/api-keys`, { kind: "admin" }],
  ["POST", `${V1}/api-keys`, { kind: "admin", body: (f) => ({ role: "app", appId: f.appB }) }],
  ["DELETE", `${V1}/api-keys/:keyId`, { kind: "admin" }],
  // event types: a global catalogue
  ["GET HEAD", `${V1}/event-type`, { kind: "catalogue" }],
  [
    "POST",
    `${V1}/event-type`,
    { kind: "admin", body: () => ({ name: "iso.by-a", description: "x" }) },
  ],
  ["GET HEAD", `${V1}/event-type/:name`, { kind: "catalogue" }],
  [
    "PUT",
    `${V1}/event-type/:name`,
    { kind: "admin", body: () => ({ description: "replaced by A" }) },
  ],
  [
    "PATCH",
    `${V1}/event-type/:name`,
    { kind: "admin", body: () => ({ description: "patched by A" }) },
  ],
  ["DELETE", `${V1}/event-type/:name`, { kind: "admin" }],
];

const RULES = new Map<string, Rule & { method: string; path: string }>();
for (const [methods, path, rule] of TABLE) {
  for (const method of methods.split(" "))
    RULES.set(`${method} ${path}`, { ...rule, method, path });
}
const byKind = (kind: Kind) => [...RULES.values()].filter((r) => r.kind === kind);
const paramsOf = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
const fill = (path: string, values: Record<string, string>) =>
  path.replace(/:(\w+)/g, (_, name: string) =>
    encodeURIComponent(values[name] ?? `missing-${name}`),
  );

// ---------------------------------------------------------------------------------------
// fixture: two tenants with every kind of resource

interface Tenant {
  appId: string;
  appUid: string;
  epId: string;
  epUid: string;
  failId: string;
  failUid: string;
  msgId: string;
  eventId: string;
  attemptId: string;
  deadDlv: string;
  pendingDlv: string;
  key: string;
  keyId: string;
}

let h: Harness;
let rx: Receiver;
let A: Tenant;
let B: Tenant;
let fixture: Fixture;
const EVENT_TYPE = `iso.catalogue.${randomBytes(3).toString("hex")}`;
const IDEMPOTENCY_KEY = `iso-${randomBytes(6).toString("hex")}`;
const run = randomBytes(4).toString("hex");

/** A request with `key`, a JSON body if given. */
async function as(
  key: string,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await h.api.inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined && { "content-type": "application/json" }),
      ...headers,
    },
    payload: body === undefined ? undefined : JSON.stringify(body),
  });
  let parsed: CallResult["body"] = null;
  try {
    parsed = res.body ? JSON.parse(res.body) : null;
  } catch {
    parsed = res.body;
  }
  return { status: res.statusCode, body: parsed, text: res.body };
}

async function makeTenant(letter: string): Promise<Tenant> {
  const appUid = `iso-${letter}-${run}`;
  const app = await h.call("POST", `${V1}/app`, { name: `tenant ${letter}`, uid: appUid });
  expect(app.status).toBe(201);
  const appId: string = app.body.id;
  const ep = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: `${rx.url}/ok-${letter}`,
    uid: `${letter}-ep-${run}`,
  });
  const fail = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: `${rx.url}/fail-${letter}`,
    uid: `${letter}-fail-${run}`,
    maxAttempts: 1,
    failureThreshold: 1,
  });
  expect([ep.status, fail.status]).toEqual([201, 201]);
  const key = await h.call("POST", `${V1}/api-keys`, {
    role: "app",
    appId: appUid,
    name: `tenant ${letter}`,
  });
  expect(key.status).toBe(201);
  const eventId = `${letter}-evt-${run}`;
  const msg = await h.call("POST", `${V1}/app/${appId}/msg`, {
    eventType: "iso.seed",
    eventId,
    payload: { tenant: letter },
  });
  expect(msg.status).toBe(202);
  return {
    appId,
    appUid,
    epId: ep.body.id,
    epUid: ep.body.uid,
    failId: fail.body.id,
    failUid: fail.body.uid,
    msgId: msg.body.id,
    eventId,
    attemptId: "",
    deadDlv: "",
    pendingDlv: "",
    key: key.body.key,
    keyId: key.body.id,
  };
}

async function deliveryOf(msgId: string, endpointId: string) {
  const { rows } = await h.db.pool.query(
    "select id, status from deliveries where message_id = $1 and endpoint_id = $2",
    [msgId, endpointId],
  );
  return rows[0] as { id: number; status: string } | undefined;
}

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver((req) => ({ status: req.path.startsWith("/fail") ? 500 : 200 }));
  A = await makeTenant("a");
  B = await makeTenant("b");
  fixture = { rx: rx.url, appB: B.appId };

  // Real attempts, a dead letter and an open circuit for both tenants.
  const worker = h.startWorker();
  await waitFor(
    async () => {
      const states = await Promise.all(
        [A, B].flatMap((t) => [deliveryOf(t.msgId, t.epId), deliveryOf(t.msgId, t.failId)]),
      );
      return states.map((s) => s?.status).join() === "delivered,dead_letter,delivered,dead_letter";
    },
    20_000,
    "seed deliveries",
  );
  await worker.stop();

  for (const t of [A, B]) {
    const { rows } = await h.db.pool.query(
      "select id from attempts where message_id = $1 and endpoint_id = $2",
      [t.msgId, t.epId],
    );
    t.attemptId = `atmpt_${rows[0].id}`;
    t.deadDlv = `dlv_${(await deliveryOf(t.msgId, t.failId))!.id}`;
    // a second message stays pending (no worker runs from here on): a cancelable delivery
    const pending = await as(
      t.key,
      "POST",
      `${V1}/app/${t.appId}/msg`,
      { eventType: "iso.pending", payload: { n: 2 } },
      t === B ? { "idempotency-key": IDEMPOTENCY_KEY } : {},
    );
    expect(pending.status).toBe(202);
    t.pendingDlv = `dlv_${(await deliveryOf(pending.body.id, t.epId))!.id}`;
  }
  const et = await h.call("POST", `${V1}/event-type`, {
    name: EVENT_TYPE,
    description: "shared catalogue entry",
  });
  expect(et.status).toBe(201);
}, 60_000);

afterAll(async () => {
  await h?.close();
  await rx?.close();
});

/** Path values naming tenant `t`'s resources, by id or by uid/eventId. */
function valuesOf(t: Tenant, form: "id" | "uid"): Record<string, string> {
  return {
    appId: form === "id" ? t.appId : t.appUid,
    endpointId: form === "id" ? t.epId : t.epUid,
    msgId: form === "id" ? t.msgId : t.eventId,
    attemptId: t.attemptId,
    deliveryId: t.pendingDlv,
    keyId: t.keyId,
    name: EVENT_TYPE,
  };
}

/** Values of resources that exist nowhere. */
function ghostValues(): Record<string, string> {
  const g = randomBytes(4).toString("hex");
  return {
    appId: `ghost-app-${g}`,
    endpointId: `ghost-ep-${g}`,
    msgId: `ghost-msg-${g}`,
    attemptId: "atmpt_999999999",
    deliveryId: "dlv_999999999",
    keyId: `key_ghost${g}`,
    name: `ghost.${g}`,
  };
}

/** B's state, to prove that nothing A tried changed it. */
async function snapshotB() {
  const q = async (sql: string) => (await h.db.pool.query(sql, [B.appId])).rows;
  return {
    app: await q("select name, uid, metadata, updated_at from applications where id = $1"),
    endpoints: await q(
      "select id, url, description, disabled, updated_at from endpoints where app_id = $1 order by id",
    ),
    secrets: await q(
      `select s.id, s.secret, s.expires_at from endpoint_secrets s join endpoints e on e.id = s.endpoint_id
       where e.app_id = $1 order by s.id`,
    ),
    messages: await q("select id from messages where app_id = $1 order by id"),
    deliveries: await q(
      "select id, status, attempt_count, updated_at from deliveries where app_id = $1 order by id",
    ),
    health: await q(
      `select h.endpoint_id, h.circuit_state, h.consecutive_failures from endpoint_health h
       join endpoints e on e.id = h.endpoint_id where e.app_id = $1 order by 1`,
    ),
    keys: await q("select id, revoked_at from api_keys where app_id = $1 order by id"),
  };
}

// ---------------------------------------------------------------------------------------

describe("every registered route is classified", () => {
  test("the discovered routes equal the classification table", () => {
    const discovered = discoveredRoutes(h.api);
    // the parser itself works: the OpenAPI document's routes are all among the discovered ones
    const doc = h.api.swagger() as { paths: Record<string, Record<string, unknown>> };
    const documented = Object.entries(doc.paths).flatMap(([p, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{(\w+)\}/g, ":$1")}`),
    );
    expect(documented.length).toBeGreaterThan(30);
    expect(discovered).toEqual(expect.arrayContaining(documented));

    const unclassified = discovered.filter((r) => !RULES.has(r));
    const stale = [...RULES.keys()].filter((r) => !discovered.includes(r));
    expect(unclassified, "routes without a tenant-scoping decision: add them to TABLE").toEqual([]);
    expect(stale, "classified routes that no longer exist").toEqual([]);
  });
});

describe("app A's key on app B's resources", () => {
  test("every app route, every method, by id and by uid: 404, the same as for a resource that does not exist", async () => {
    let probes = 0;
    for (const rule of byKind("app")) {
      for (const form of ["id", "uid"] as const) {
        const url = fill(rule.path, valuesOf(B, form));
        const body = rule.body?.(fixture);
        const res = await as(A.key, rule.method, url, body);
        const what = `${rule.method} ${url}`;
        expect(res.status, what).toBe(404);
        const ghost = await as(A.key, rule.method, fill(rule.path, ghostValues()), body);
        expect(ghost.status, `${what} (ghost)`).toBe(404);
        if (rule.method !== "HEAD") {
          expect(res.body, what).toEqual({ code: "not_found", detail: "application not found" });
          expect(res.body, `${what}: same answer as a resource that does not exist`).toEqual(
            ghost.body,
          );
        }
        probes++;
      }
    }
    expect(probes).toBeGreaterThan(40);
  });

  test("A's own app with one of B's endpoints, messages or attempts in the path: 404", async () => {
    let probes = 0;
    for (const rule of byKind("app")) {
      for (const param of paramsOf(rule.path).filter((p) => p !== "appId")) {
        // PUT .../endpoint/{id} upserts: a foreign id creates an endpoint in A (tested below)
        if (rule.method === "PUT" && param === "endpointId") continue;
        for (const form of ["id", "uid"] as const) {
          const values = { ...valuesOf(A, "id"), [param]: valuesOf(B, form)[param]! };
          const url = fill(rule.path, values);
          const body = rule.body?.(fixture);
          const res = await as(A.key, rule.method, url, body);
          const what = `${rule.method} ${url} (${param} of B)`;
          expect(res.status, what).toBe(404);
          const ghost = await as(
            A.key,
            rule.method,
            fill(rule.path, { ...values, [param]: ghostValues()[param]! }),
            body,
          );
          expect(ghost.status, `${what} (ghost)`).toBe(404);
          if (rule.method !== "HEAD") {
            expect(res.body.code, what).toBe("not_found");
            expect(res.body, `${what}: same answer as a resource that does not exist`).toEqual(
              ghost.body,
            );
          }
          probes++;
        }
      }
    }
    expect(probes).toBeGreaterThan(30);
  });

  test("PUT A's endpoint path with B's endpoint id creates a new endpoint in A and leaves B's alone", async () => {
    const before = await snapshotB();
    for (const foreign of [B.epId, B.epUid]) {
      const res = await as(A.key, "PUT", `${V1}/app/${A.appId}/endpoint/${foreign}`, {
        url: `${rx.url}/upserted-by-a`,
      });
      expect(res.status).toBe(201);
      expect(res.body.id).not.toBe(B.epId);
      const { rows } = await h.db.pool.query("select app_id from endpoints where id = $1", [
        res.body.id,
      ]);
      expect(rows[0].app_id).toBe(A.appId);
      expect(
        (await as(A.key, "DELETE", `${V1}/app/${A.appId}/endpoint/${res.body.id}`)).status,
      ).toBe(204);
    }
    expect(await snapshotB()).toEqual(before);
  });

  test("B's delivery through /deliveries/{id}/cancel: 404 like a delivery that does not exist", async () => {
    for (const rule of byKind("delivery")) {
      for (const dlv of [B.pendingDlv, B.deadDlv]) {
        const res = await as(A.key, rule.method, fill(rule.path, { deliveryId: dlv }));
        expect(res.status, `${rule.method} ${dlv}`).toBe(404);
        const ghost = await as(A.key, rule.method, fill(rule.path, ghostValues()));
        expect(res.body).toEqual(ghost.body);
      }
    }
    const { rows } = await h.db.pool.query("select status from deliveries where id = $1", [
      Number(B.pendingDlv.slice(4)),
    ]);
    expect(rows[0].status).toBe("pending");
  });

  test("references to B in query strings and bodies: 404", async () => {
    const probes: [string, string, unknown?][] = [
      ["GET", `${V1}/dead-letters?app_id=${B.appId}`],
      ["GET", `${V1}/dead-letters?app_id=${B.appUid}`],
      ["GET", `${V1}/dead-letters?endpoint_id=${B.failId}`],
      ["GET", `${V1}/dead-letters?endpoint_id=${B.failUid}`],
      ["GET", `${V1}/dead-letters/analysis?app_id=${B.appId}`],
      ["GET", `${V1}/dead-letters/analysis?endpoint_id=${B.failId}`],
      ["GET", `${V1}/health/endpoints?app_id=${B.appId}`],
      ["GET", `${V1}/health/endpoints?app_id=${B.appUid}`],
      ["GET", `${V1}/health/summary?app_id=${B.appId}`],
      ["GET", `${V1}/alerts?app_id=${B.appId}`],
      ["GET", `${V1}/app/${A.appId}/attempt/msg/${A.msgId}?endpoint_id=${B.epId}`],
      ["POST", `${V1}/dead-letters/requeue`, { deliveryId: B.deadDlv }],
      ["POST", `${V1}/dead-letters/requeue`, { endpointId: B.failId }],
      ["POST", `${V1}/dead-letters/requeue`, { endpointId: B.failUid }],
      ["POST", `${V1}/dead-letters/requeue`, { appId: B.appId, since: "2000-01-01T00:00:00Z" }],
      // Svix's "create the app alongside": never for an app key, never on B's uid
      [
        "POST",
        `${V1}/app/${B.appUid}/msg`,
        { eventType: "x", payload: {}, application: { name: "hijack" } },
      ],
      [
        "POST",
        `${V1}/app/iso-new-${run}/msg`,
        { eventType: "x", payload: {}, application: { name: "new" } },
      ],
      ["PUT", `${V1}/app/iso-new-${run}`, { name: "upsert by an app key" }],
    ];
    for (const [method, url, body] of probes) {
      const res = await as(A.key, method, url, body);
      expect(res.status, `${method} ${url} ${JSON.stringify(body ?? "")}`).toBe(404);
      expect(res.body.code).toBe("not_found");
    }
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from applications where uid = $1",
      [`iso-new-${run}`],
    );
    expect(rows[0].n).toBe(0);
  });

  test("B's idempotency-key does not replay B's response to A", async () => {
    // B used IDEMPOTENCY_KEY (and A never did) for this very request at setup: A repeating
    // it must get no replay of B's 202 and its message
    const res = await as(
      A.key,
      "POST",
      `${V1}/app/${B.appId}/msg`,
      { eventType: "iso.pending", payload: { n: 2 } },
      {
        "idempotency-key": IDEMPOTENCY_KEY,
      },
    );
    expect(res.status).toBe(404);
  });

  test("admin-only routes without an app in the path answer 403 to an app key, and do nothing", async () => {
    const keysBefore = (await h.db.pool.query("select count(*)::int as n from api_keys")).rows[0].n;
    const appsBefore = (await h.db.pool.query("select count(*)::int as n from applications"))
      .rows[0].n;
    for (const rule of byKind("admin")) {
      const url = fill(rule.path, valuesOf(B, "id"));
      const res = await as(A.key, rule.method, url, rule.body?.(fixture));
      expect(res.status, `${rule.method} ${url}`).toBe(403);
      if (rule.method !== "HEAD") expect(res.body.code).toBe("forbidden");
    }
    // B's key by its id, A's own key, the admin's: an app key revokes none of them
    for (const keyId of [A.keyId, B.keyId]) {
      expect((await as(A.key, "DELETE", `${V1}/api-keys/${keyId}`)).status).toBe(403);
    }
    expect((await as(A.key, "GET", `${V1}/api-keys?app_id=${B.appId}`)).status).toBe(403);
    expect((await h.db.pool.query("select count(*)::int as n from api_keys")).rows[0].n).toBe(
      keysBefore,
    );
    expect(
      (
        await h.db.pool.query(
          "select count(*)::int as n from api_keys where revoked_at is not null",
        )
      ).rows[0].n,
    ).toBe(0);
    expect((await h.db.pool.query("select count(*)::int as n from applications")).rows[0].n).toBe(
      appsBefore,
    );
    const et = await h.call("GET", `${V1}/event-type/${EVENT_TYPE}`);
    expect(et.body.description).toBe("shared catalogue entry");
    expect(et.body.archived).toBe(false);
  });

  test("the event-type catalogue is global: an app key reads it", async () => {
    for (const rule of byKind("catalogue")) {
      const res = await as(A.key, rule.method, fill(rule.path, valuesOf(B, "id")));
      expect(res.status, `${rule.method} ${rule.path}`).toBe(200);
    }
  });
});

describe("listings with app A's key show app A only", () => {
  test("GET /app", async () => {
    for (const q of ["", "?limit=250", "?order=descending", `?iterator=-${B.appId}`]) {
      const res = await as(A.key, "GET", `${V1}/app${q}`);
      expect(res.status).toBe(200);
      expect(
        res.body.data.every((a: { id: string }) => a.id === A.appId),
        q,
      ).toBe(true);
    }
    const mine = await as(A.key, "GET", `${V1}/app`);
    expect(mine.body.data.map((a: { id: string }) => a.id)).toEqual([A.appId]);
    const all = await h.call("GET", `${V1}/app?limit=250`);
    expect(all.body.data.map((a: { id: string }) => a.id)).toEqual(
      expect.arrayContaining([A.appId, B.appId]),
    );
  });

  test("GET /health/endpoints", async () => {
    const res = await as(A.key, "GET", `${V1}/health/endpoints?limit=250`);
    expect(res.status).toBe(200);
    const ids = res.body.data.map((e: { endpointId: string; appId: string }) => {
      expect(e.appId).toBe(A.appId);
      return e.endpointId;
    });
    expect(ids.sort()).toEqual([A.epId, A.failId].sort());
    const all = await h.call("GET", `${V1}/health/endpoints?limit=250`);
    expect(all.body.data.map((e: { endpointId: string }) => e.endpointId)).toEqual(
      expect.arrayContaining([B.epId, B.failId]),
    );
  });

  test("GET /dead-letters and /dead-letters/analysis", async () => {
    const list = await as(A.key, "GET", `${V1}/dead-letters?limit=250`);
    expect(list.status).toBe(200);
    expect(
      list.body.data.map((d: { deliveryId: string; appId: string }) => [d.deliveryId, d.appId]),
    ).toEqual([[A.deadDlv, A.appId]]);
    const analysis = await as(A.key, "GET", `${V1}/dead-letters/analysis`);
    expect(analysis.status).toBe(200);
    expect(
      analysis.body.data.map((d: { endpointId: string; appId: string }) => [d.endpointId, d.appId]),
    ).toEqual([[A.failId, A.appId]]);
    // B's exist
    const all = await h.call("GET", `${V1}/dead-letters?limit=250`);
    expect(all.body.data.map((d: { deliveryId: string }) => d.deliveryId)).toEqual(
      expect.arrayContaining([A.deadDlv, B.deadDlv]),
    );
    const allAnalysis = await h.call("GET", `${V1}/dead-letters/analysis`);
    expect(allAnalysis.body.data.map((d: { endpointId: string }) => d.endpointId)).toEqual(
      expect.arrayContaining([B.failId]),
    );
    // the requeue plan counts A's only; B's app and B's endpoint are not there for A
    const plan = await as(A.key, "GET", `${V1}/dead-letters/requeue-plan`);
    expect(plan.status).toBe(200);
    expect(plan.body.endpoints.map((e: { endpointId: string }) => e.endpointId)).toEqual([
      A.failId,
    ]);
    expect(
      (await as(A.key, "GET", `${V1}/dead-letters/requeue-plan?app_id=${B.appId}`)).status,
    ).toBe(404);
    const viaB = await as(A.key, "GET", `${V1}/dead-letters/requeue-plan?endpoint_id=${B.failId}`);
    expect([404, 200]).toContain(viaB.status);
    if (viaB.status === 200) expect(viaB.body.total).toBe(0);
    const allPlan = await h.call("GET", `${V1}/dead-letters/requeue-plan`);
    expect(allPlan.body.endpoints.map((e: { endpointId: string }) => e.endpointId)).toEqual(
      expect.arrayContaining([A.failId, B.failId]),
    );
  });

  test("GET /alerts", async () => {
    const all = await h.call("GET", `${V1}/alerts`);
    expect(all.status).toBe(200);
    const subjectsOf = (res: {
      body: { data: { subject: { appId: string | null; id: string } }[] };
    }) => res.body.data.map((a) => a.subject);
    // B's failing endpoint opened its circuit: an alert exists for B
    expect(subjectsOf(all).some((s) => s.appId === B.appId)).toBe(true);
    const mine = await as(A.key, "GET", `${V1}/alerts`);
    expect(mine.status).toBe(200);
    expect(subjectsOf(mine).length).toBeGreaterThan(0);
    for (const s of subjectsOf(mine)) expect(s.appId).toBe(A.appId);
    expect(mine.text).not.toContain(B.failId);
    expect(mine.text).not.toContain(B.appId);
  });

  test("GET /health/summary", async () => {
    const strip = (b: Record<string, unknown>) => ({
      ...b,
      oldestPending: b.oldestPending ? "set" : null,
    });
    const mine = await as(A.key, "GET", `${V1}/health/summary`);
    expect(mine.status).toBe(200);
    const adminForA = await h.call("GET", `${V1}/health/summary?app_id=${A.appId}`);
    expect(strip(mine.body)).toEqual(strip(adminForA.body));
    const all = await h.call("GET", `${V1}/health/summary`);
    expect(all.body.deadLetter).toBeGreaterThan(mine.body.deadLetter);
    expect(all.body.pending).toBeGreaterThan(mine.body.pending);
  });

  test("every list route is covered above and answers HEAD too", async () => {
    const lists = byKind("list")
      .filter((r) => r.method === "GET")
      .map((r) => r.path)
      .sort();
    expect(lists).toEqual([
      `${V1}/alerts`,
      `${V1}/app`,
      `${V1}/dead-letters`,
      `${V1}/dead-letters/analysis`,
      `${V1}/dead-letters/requeue-plan`,
      `${V1}/health/endpoints`,
      `${V1}/health/summary`,
    ]);
    for (const rule of byKind("list").filter((r) => r.method === "HEAD")) {
      expect((await as(A.key, "HEAD", rule.path)).status, rule.path).toBe(200);
    }
  });

  test("requeue by time with A's key requeues A's dead letters only", async () => {
    for (const rule of byKind("requeue")) {
      const res = await as(A.key, rule.method, rule.path, rule.body?.(fixture));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ requeued: 1 });
    }
    const status = async (dlv: string) =>
      (await h.db.pool.query("select status from deliveries where id = $1", [Number(dlv.slice(4))]))
        .rows[0].status;
    expect(await status(A.deadDlv)).toBe("pending");
    expect(await status(B.deadDlv)).toBe("dead_letter");
  });
});

describe("B's data survived and every probe named a real resource", () => {
  test("nothing A tried changed B", async () => {
    // taken before B's own calls below; compared with a fresh read of the same rows
    const now = await snapshotB();
    expect(now.app[0].name).toBe("tenant b");
    expect(now.endpoints.map((e: { url: string }) => e.url).sort()).toEqual([
      `${rx.url}/fail-b`,
      `${rx.url}/ok-b`,
    ]);
    expect(now.secrets.every((s: { expires_at: Date | null }) => s.expires_at === null)).toBe(true);
    expect(now.secrets).toHaveLength(2);
    expect(now.messages).toHaveLength(2);
    expect(now.deliveries.map((d: { status: string }) => d.status).sort()).toEqual([
      "dead_letter",
      "delivered",
      "pending",
      "pending",
    ]);
    expect(now.keys.every((k: { revoked_at: Date | null }) => k.revoked_at === null)).toBe(true);
    const circuits = now.health.map((r: { circuit_state: string }) => r.circuit_state).sort();
    expect(circuits).toEqual(["closed", "open"]);
  });

  test("the same requests with B's own key succeed (so the 404s were about scoping)", async () => {
    const order = (m: string) =>
      ({ GET: 0, HEAD: 0, POST: 1, PUT: 1, PATCH: 1, DELETE: 2 })[m] ?? 3;
    const rules = [...byKind("app"), ...byKind("delivery")].sort(
      (x, y) =>
        order(x.method) - order(y.method) ||
        (x.method === "DELETE" ? y.path.length - x.path.length : 0),
    );
    for (const rule of rules) {
      const url = fill(rule.path, valuesOf(B, "id"));
      const res = await as(B.key, rule.method, url, rule.body?.({ ...fixture }));
      expect(res.status, `${rule.method} ${url}: ${res.text}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${rule.method} ${url}: ${res.text}`).toBeLessThan(300);
    }
  });
});
