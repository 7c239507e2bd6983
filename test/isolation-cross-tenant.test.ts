/**
 * Tenant isolation, one tenant's key on the other's resources (docs/security.md, "API
 * keys"): with app A's key, every read and write on app B's applications, endpoints,
 * messages, attempts, secrets and deliveries, and every reference to B in a query string or
 * body, answers 404 (never 403: existence is not revealed), exactly as if the resource did
 * not exist; admin-only routes answer 403 and do nothing. Then B's data is checked intact,
 * and the same requests with B's own key succeed, so every probe named a real resource.
 *
 * Real PostgreSQL (one cloned database), in-process API through inject(), a real worker and
 * receiver on 127.0.0.1 to create genuine attempts, dead letters and open circuits.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { publicIdsOf } from "../src/ids-public-key.ts";
import type { Harness } from "./helpers/harness.ts";
import type { Receiver } from "./helpers/receiver.ts";
import { byKind, type Fixture, fill, paramsOf } from "./helpers/tenant-routes.ts";
import { startTenants, type Tenant, type Tenants, tenantCalls } from "./helpers/tenants.ts";

const V1 = "/api/v1";

let tenants: Tenants;
let h: Harness;
let rx: Receiver;
let A: Tenant;
let B: Tenant;
let fixture: Fixture;

beforeAll(async () => {
  tenants = await startTenants();
  ({ h, rx, A, B, fixture } = tenants);
}, 60_000);
afterAll(async () => {
  await tenants?.close();
});

const { as, ghostValues, snapshotB, valuesOf } = tenantCalls(() => tenants);

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
      (await publicIdsOf(h.db.pool)).parse("delivery", B.pendingDlv),
    ]);
    expect(rows[0].status).toBe("pending");
  });

  test("B's background task through /background-task/{id}: 404 like a task that does not exist", async () => {
    for (const rule of byKind("task")) {
      const res = await as(A.key, rule.method, fill(rule.path, { taskId: B.taskId }));
      expect(res.status, `${rule.method} ${rule.path}`).toBe(404);
      const ghost = await as(A.key, rule.method, fill(rule.path, ghostValues()));
      expect(res.body).toEqual(ghost.body);
    }
    const { rows } = await h.db.pool.query("select status from background_tasks where id = $1", [
      B.taskId,
    ]);
    expect(rows[0].status).toBe("running");
    // (B's own key reads it: the 404 was about scoping)
    expect((await as(B.key, "GET", `${V1}/background-task/${B.taskId}`)).status).toBe(200);
    const listed = await as(A.key, "GET", `${V1}/background-task?limit=250`);
    expect(listed.body.data.map((t: { data: { appId: string } }) => t.data.appId)).not.toContain(
      B.appId,
    );
    expect(listed.body.data.map((t: { id: string }) => t.id)).toContain(A.taskId);
  });

  test("references to B in query strings and bodies: 404", async () => {
    const probes: [string, string, unknown?][] = [
      ["GET", `${V1}/dead-letters?app_id=${B.appId}`],
      ["GET", `${V1}/dead-letters?app_id=${B.appUid}`],
      ["GET", `${V1}/dead-letters?endpoint_id=${B.failId}`],
      ["GET", `${V1}/dead-letters?endpoint_id=${B.failUid}`],
      ["GET", `${V1}/dead-letters/analysis?app_id=${B.appId}`],
      ["GET", `${V1}/dead-letters/analysis?endpoint_id=${B.failId}`],
      ["GET", `${V1}/dead-letters/requeue-plan?app_id=${B.appId}`],
      ["GET", `${V1}/dead-letters/requeue-plan?app_id=${B.appUid}`],
      ["GET", `${V1}/dead-letters/requeue-plan?endpoint_id=${B.failId}`],
      ["GET", `${V1}/dead-letters/requeue-plan?endpoint_id=${B.failUid}`],
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
        `${V1}/app/iso-new-${tenants.run}/msg`,
        { eventType: "x", payload: {}, application: { name: "new" } },
      ],
      ["PUT", `${V1}/app/iso-new-${tenants.run}`, { name: "upsert by an app key" }],
    ];
    for (const [method, url, body] of probes) {
      const res = await as(A.key, method, url, body);
      expect(res.status, `${method} ${url} ${JSON.stringify(body ?? "")}`).toBe(404);
      expect(res.body.code).toBe("not_found");
    }
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from applications where uid = $1",
      [`iso-new-${tenants.run}`],
    );
    expect(rows[0].n).toBe(0);
  });

  test("B's idempotency-key does not replay B's response to A", async () => {
    // B used tenants.idempotencyKey (and A never did) for this very request at setup: A repeating
    // it must get no replay of B's 202 and its message
    const res = await as(
      A.key,
      "POST",
      `${V1}/app/${B.appId}/msg`,
      { eventType: "iso.pending", payload: { n: 2 } },
      {
        "idempotency-key": tenants.idempotencyKey,
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
    const et = await h.call("GET", `${V1}/event-type/${tenants.eventType}`);
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
      if (rule.ownStatus !== undefined) {
        expect(res.status, `${rule.method} ${url}: ${res.text}`).toBe(rule.ownStatus);
        continue;
      }
      expect(res.status, `${rule.method} ${url}: ${res.text}`).toBeGreaterThanOrEqual(200);
      expect(res.status, `${rule.method} ${url}: ${res.text}`).toBeLessThan(300);
    }
  });
});
