/**
 * Tenant isolation, listings (docs/security.md, "API keys"): with app A's key the listings
 * across apps (applications, endpoint health, health summary, alerts, dead letters, their
 * analysis and the requeue plan) show app A's rows only, and a requeue by time requeues A's
 * dead letters only.
 *
 * Real PostgreSQL (one cloned database), in-process API through inject(), a real worker and
 * receiver on 127.0.0.1 to create genuine attempts, dead letters and open circuits.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { publicIdsOf } from "../src/ids-public-key.ts";
import type { Harness } from "./helpers/harness.ts";
import { byKind, type Fixture } from "./helpers/tenant-routes.ts";
import { startTenants, type Tenant, type Tenants, tenantCalls } from "./helpers/tenants.ts";

const V1 = "/api/v1";

let tenants: Tenants;
let h: Harness;
let A: Tenant;
let B: Tenant;
let fixture: Fixture;

beforeAll(async () => {
  tenants = await startTenants();
  ({ h, A, B, fixture } = tenants);
}, 60_000);
afterAll(async () => {
  await tenants?.close();
});

const { as } = tenantCalls(() => tenants);

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

  test("GET /dead-letters, /dead-letters/analysis and /dead-letters/requeue-plan", async () => {
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
    // the plan of a requeue: A's failing endpoint only, and B's with the admin key
    const plan = await as(A.key, "GET", `${V1}/dead-letters/requeue-plan`);
    expect(plan.status).toBe(200);
    expect(plan.body).toEqual({
      total: 1,
      endpoints: [{ endpointId: A.failId, deliveries: 1, perSecond: null }],
    });
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
      `${V1}/background-task`,
      `${V1}/dead-letters`,
      `${V1}/dead-letters/analysis`,
      `${V1}/dead-letters/requeue-plan`,
      `${V1}/health/endpoints`,
      `${V1}/health/summary`,
      `${V1}/stats/buckets`,
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
    const ids = await publicIdsOf(h.db.pool);
    const status = async (dlv: string) =>
      (
        await h.db.pool.query("select status from deliveries where id = $1", [
          ids.parse("delivery", dlv),
        ])
      ).rows[0].status;
    expect(await status(A.deadDlv)).toBe("pending");
    expect(await status(B.deadDlv)).toBe("dead_letter");
  });
});
