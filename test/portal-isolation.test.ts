/**
 * Tenant isolation of the portal (docs/portal.md, "Isolation"), HTTP-level and table-
 * driven over every portal route in test/helpers/tenant-routes.ts (kind "portal"; a new
 * portal route without a row there fails isolation-routes.test.ts): app A's link against
 * app B's ids is a 404, the same as for ids that exist nowhere, and changes nothing of B;
 * listings show A's rows only; A's own ids work (so the 404s were about scoping); expired,
 * revoked and expired-all links, and no session at all, are refused on every route; a POST
 * without the CSRF token is refused; a read-only link changes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { DashboardClient } from "./helpers/dashboard-client.ts";
import { openPortal } from "./helpers/portal-client.ts";
import { byKind, fill, paramsOf } from "./helpers/tenant-routes.ts";
import { startTenants, type Tenant, type Tenants, tenantCalls } from "./helpers/tenants.ts";

const V1 = "/api/v1";
let tenants: Tenants;
let A: Tenant;
let B: Tenant;
let portalA: DashboardClient;

beforeAll(async () => {
  tenants = await startTenants();
  ({ A, B } = tenants);
  portalA = await openPortal(tenants.h.api, A.portalToken);
}, 60_000);
afterAll(async () => {
  await tenants?.close();
});

const { valuesOf, ghostValues, snapshotB } = tenantCalls(() => tenants);

/** Every portal route but sign-out (which ends the session: tested on its own). */
const portalRules = () => byKind("portal").filter((r) => r.path !== "/portal/sign-out");

/** A request of the rule's method through the client (form fields for a POST). */
async function send(
  c: DashboardClient,
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  if (method === "POST") return c.post(url, (body as Record<string, string>) ?? {}, headers);
  const res = await tenants.h.api.inject({
    method: method as "GET",
    url,
    headers: { cookie: [...c.cookies].map(([k, v]) => `${k}=${v}`).join("; "), ...headers },
  });
  return res;
}

/** The alert text of an error page (the API's reason), to compare answers. */
const alertOf = (body: string) => /role="alert">([^<]*)</.exec(body)?.[1] ?? body;

describe("app A's portal session on app B's resources", () => {
  test("every portal route with an id, each id of B by id and by uid: 404, the same as an id that exists nowhere", async () => {
    const before = await snapshotB();
    let probes = 0;
    for (const rule of portalRules()) {
      for (const param of paramsOf(rule.path)) {
        for (const form of ["id", "uid"] as const) {
          const values = { ...valuesOf(A, "id"), [param]: valuesOf(B, form)[param]! };
          const url = fill(rule.path, values);
          const body = rule.body?.(tenants.fixture);
          const res = await send(portalA, rule.method, url, body);
          const what = `${rule.method} ${url} (${param} of B)`;
          expect(res.statusCode, what).toBe(404);
          const ghost = await send(
            portalA,
            rule.method,
            fill(rule.path, { ...values, [param]: ghostValues()[param]! }),
            body,
          );
          expect(ghost.statusCode, `${what} (ghost)`).toBe(404);
          if (rule.method !== "HEAD") {
            expect(alertOf(res.body), what).toBe(alertOf(ghost.body));
            for (const id of [B.epId, B.failId, B.msgId, B.appId])
              expect(res.body, `${what} shows ${id}`).not.toContain(id);
          }
          probes++;
        }
      }
    }
    expect(probes).toBeGreaterThan(30);
    expect(await snapshotB()).toEqual(before);
  });

  test("every portal page without an id shows A's rows only; adding an endpoint adds it to A", async () => {
    const before = await snapshotB();
    for (const rule of portalRules().filter((r) => paramsOf(r.path).length === 0)) {
      const res = await send(portalA, rule.method, rule.path, rule.body?.(tenants.fixture));
      const what = `${rule.method} ${rule.path}`;
      expect(res.statusCode, what).toBeLessThan(400);
      for (const id of [B.epId, B.failId, B.msgId, B.appId, B.epUid])
        expect(res.body, `${what} shows ${id}`).not.toContain(id);
      if (rule.method === "GET" && rule.path !== "/portal/endpoints/new") {
        const own = ["/portal/messages", "/portal/message-export"].includes(rule.path)
          ? A.msgId
          : A.epId;
        // (the event-type catalogue and the egress IPs are global: no tenant's rows; A's
        // first endpoint may have no attempt to export)
        if (
          !["/portal/event-types", "/portal/egress", "/portal/attempt-export"].includes(rule.path)
        )
          expect(res.body, what).toContain(own);
      }
    }
    const { rows } = await tenants.h.db.pool.query(
      "select app_id from endpoints where url like '%/planted-by-a'",
    );
    expect(rows.map((r) => r.app_id)).toEqual([A.appId]);
    expect(await snapshotB()).toEqual(before);
  });

  test("the same routes with A's own ids succeed (so the 404s were about scoping)", async () => {
    const order = (r: { method: string; path: string }) =>
      r.method !== "POST" ? 0 : r.path.endsWith("/delete") ? 2 : 1;
    for (const rule of portalRules().sort((x, y) => order(x) - order(y))) {
      const values = valuesOf(A, "id");
      // the delete takes an endpoint of its own: A's seeded ones are used further on
      if (rule.path.endsWith("/delete"))
        values.endpointId = (
          await tenants.h.call("POST", `${V1}/app/${A.appId}/endpoint`, {
            url: `${tenants.rx.url}/to-delete`,
          })
        ).body.id;
      const url = fill(rule.path, values);
      const res = await send(portalA, rule.method, url, rule.body?.(tenants.fixture));
      if (rule.ownStatus !== undefined) {
        expect(res.statusCode, `${rule.method} ${url}: ${alertOf(res.body)}`).toBe(rule.ownStatus);
        continue;
      }
      expect(res.statusCode, `${rule.method} ${url}: ${alertOf(res.body)}`).toBeLessThan(400);
    }
  });
});

describe("links that no longer open anything", () => {
  /** Every portal route answers 401 (the expired page) to this client. */
  async function refusedEverywhere(c: DashboardClient, why: string) {
    for (const rule of byKind("portal")) {
      const url = fill(rule.path, valuesOf(A, "id"));
      const res = await send(c, rule.method, url, rule.body?.(tenants.fixture));
      expect(res.statusCode, `${why}: ${rule.method} ${url}`).toBe(401);
      if (rule.method !== "HEAD") expect(res.body).toContain("This link has expired");
    }
  }

  const exchange = (token: string) =>
    tenants.h.api.inject({
      method: "POST",
      url: "/portal/session",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ token }),
    });

  async function newLink(): Promise<{ id: string; token: string }> {
    const res = await tenants.h.call("POST", `${V1}/auth/app-portal-access/${A.appId}`, {});
    return res.body;
  }

  test("no session cookie at all", async () => {
    const { dashboardClient } = await import("./helpers/dashboard-client.ts");
    await refusedEverywhere(dashboardClient(tenants.h.api), "no session");
  });

  test("an expired link: its open session ends, and it opens no new one", async () => {
    const l = await newLink();
    const c = await openPortal(tenants.h.api, l.token);
    // (no waiting: the link's expiry is moved into the past)
    await tenants.h.db.pool.query(
      "update portal_tokens set expires_at = now() - interval '1 second' where id = $1",
      [l.id],
    );
    await refusedEverywhere(c, "expired");
    expect((await exchange(l.token)).statusCode).toBe(401);
  });

  test("a revoked link, and expire-all: sessions end at once", async () => {
    const l = await newLink();
    const c = await openPortal(tenants.h.api, l.token);
    const revoke = await tenants.h.call(
      "POST",
      `${V1}/auth/app/${A.appId}/portal-access/${l.id}/revoke`,
    );
    expect(revoke.status).toBe(204);
    await refusedEverywhere(c, "revoked");
    expect((await exchange(l.token)).statusCode).toBe(401);

    const m = await newLink();
    const d = await openPortal(tenants.h.api, m.token);
    expect((await tenants.h.call("POST", `${V1}/auth/app/${A.appId}/expire-all`, {})).status).toBe(
      204,
    );
    await refusedEverywhere(d, "expire-all");
  });

  test("B's link opens B only: A's ids are 404 to it", async () => {
    const portalB = await openPortal(tenants.h.api, B.portalToken);
    const res = await portalB.get(`/portal/endpoints/${A.epId}`);
    expect(res.statusCode).toBe(404);
    expect((await portalB.get(`/portal/messages/${A.msgId}`)).statusCode).toBe(404);
  });

  test("sign-out ends the session, the link stays usable", async () => {
    const l = await newLink();
    const c = await openPortal(tenants.h.api, l.token);
    expect((await c.post("/portal/sign-out")).statusCode).toBe(200);
    expect((await c.get("/portal/endpoints")).statusCode).toBe(401);
    expect((await exchange(l.token)).statusCode).toBe(204);
  });
});

describe("CSRF and capabilities", () => {
  test("every state-changing portal route refuses a POST without the session's CSRF token, or from another origin", async () => {
    const l = await newLinkFor(A);
    const c = await openPortal(tenants.h.api, l);
    const before = await tenants.h.db.pool.query(
      "select id, url, disabled, updated_at from endpoints where app_id = $1 order by id",
      [A.appId],
    );
    for (const rule of byKind("portal").filter((r) => r.method === "POST")) {
      const url = fill(rule.path, valuesOf(A, "id"));
      const fields = (rule.body?.(tenants.fixture) as Record<string, string>) ?? {};
      const none = await c.post(url, { ...fields, _csrf: "" });
      expect(none.statusCode, `${url} without a token`).toBe(403);
      const wrong = await c.post(url, { ...fields, _csrf: "x".repeat(43) });
      expect(wrong.statusCode, `${url} with a wrong token`).toBe(403);
      const foreign = await c.post(url, fields, { origin: "https://evil.example" });
      expect(foreign.statusCode, `${url} from another origin`).toBe(403);
    }
    const after = await tenants.h.db.pool.query(
      "select id, url, disabled, updated_at from endpoints where app_id = $1 order by id",
      [A.appId],
    );
    expect(after.rows).toEqual(before.rows);
  });

  test("a read-only link (ViewBase) reads but changes nothing: every action is 403", async () => {
    const res = await tenants.h.call("POST", `${V1}/auth/app-portal-access/${A.appId}`, {
      readOnly: true,
    });
    const c = await openPortal(tenants.h.api, res.body.token);
    const page = await c.get(`/portal/endpoints/${A.epId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain("/secret/rotate");
    for (const rule of byKind("portal").filter(
      (r) => r.method === "POST" && r.path !== "/portal/sign-out",
    )) {
      const url = fill(rule.path, valuesOf(A, "id"));
      const out = await c.post(url, (rule.body?.(tenants.fixture) as Record<string, string>) ?? {});
      expect(out.statusCode, url).toBe(403);
    }
  });
});

async function newLinkFor(t: Tenant): Promise<string> {
  const res = await tenants.h.call("POST", `${V1}/auth/app-portal-access/${t.appId}`, {});
  return res.body.token;
}
