/**
 * Portal access links (docs/portal.md, "Access links"): the svix client's
 * authentication.appPortalAccess / expireAll / logout against hookrelay on a real port, the
 * link's expiry, capabilities, revocation, and that only the token's hash is stored.
 */
import type { AddressInfo } from "node:net";
import { ApiException, Svix } from "svix";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { livePortalToken } from "../src/db/queries/portal-access.ts";
import { portalSecretHash } from "../src/security/portal-token.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { maintenanceTask } from "./helpers/maintenance-task.ts";

const V1 = "/api/v1";
let h: Harness;
let svix: Svix;
let base: string;
let appId: string;
const uid = `portal-${Date.now().toString(36)}`;

beforeAll(async () => {
  h = await startHarness();
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(h.api.server.address() as AddressInfo).port}`;
  svix = new Svix(h.adminKey, { serverUrl: base });
  appId = (await svix.application.create({ name: "Portal Co", uid })).id;
});
afterAll(async () => {
  await h?.close();
});

const live = async (token: string) => livePortalToken(h.db.pool, portalSecretHash(token));
/** A link's lifetime as stored: expires_at less created_at, in seconds (both the insert's now()). */
const lifetimeS = async (token: string): Promise<number> =>
  (
    await h.db.pool.query(
      "select extract(epoch from expires_at - created_at)::float8 as s from portal_tokens where token_hash = $1",
      [portalSecretHash(token)],
    )
  ).rows[0].s;

describe("POST /auth/app-portal-access/{app}", () => {
  test("the svix client gets a link to this server's portal, the token in the fragment, valid 1 h", async () => {
    const out = await svix.authentication.appPortalAccess(uid, {});
    expect(out.token).toMatch(/^hrpt_[A-Za-z0-9_-]{43}$/);
    expect(out.url).toBe(`${base}/portal/#token=${out.token}`);
    const grant = await live(out.token);
    expect(grant?.app_id).toBe(appId);
    expect(await lifetimeS(out.token)).toBe(3_600);
    // all capabilities when none are asked for
    expect(grant!.capabilities).toContain("ManageEndpoint");
  });

  test("only the token's hash is stored, nowhere the token (not as an idempotent replay either)", async () => {
    // the svix client sends an idempotency-key with every POST
    const out = await svix.authentication.appPortalAccess(appId, {}, { idempotencyKey: "k-1" });
    const { rows } = await h.db.pool.query("select * from portal_tokens");
    expect(JSON.stringify(rows)).not.toContain(out.token);
    expect(JSON.stringify(rows)).toContain(portalSecretHash(out.token));
    const keys = await h.db.pool.query("select * from idempotency_keys");
    expect(JSON.stringify(keys.rows)).not.toContain(out.token);
    // a repeat is a new link, not the old one replayed
    const again = await svix.authentication.appPortalAccess(appId, {}, { idempotencyKey: "k-1" });
    expect(again.token).not.toBe(out.token);
  });

  test("expiry in seconds, 60 s to 7 days; outside that a 422 naming the field", async () => {
    const out = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, { expiry: 120 });
    expect(out.status).toBe(200);
    expect(await lifetimeS(out.body.token)).toBe(120);
    const { rows } = await h.db.pool.query(
      "select expires_at from portal_tokens where token_hash = $1",
      [portalSecretHash(out.body.token)],
    );
    expect(out.body.expiresAt).toBe(rows[0].expires_at.toISOString());
    for (const expiry of [59, 7 * 86_400 + 1, "3600"]) {
      const bad = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, { expiry });
      expect(bad.status, String(expiry)).toBe(422);
      expect(bad.body.detail).toContain("expiry");
    }
  });

  test("capabilities: ViewBase always; readOnly means ViewBase only", async () => {
    const ro = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, { readOnly: true });
    expect((await live(ro.body.token))!.capabilities).toEqual(["ViewBase"]);
    const some = await svix.authentication.appPortalAccess(appId, {
      capabilities: ["CreateAttempts" as never],
    });
    expect((await live(some.token))!.capabilities.sort()).toEqual(["CreateAttempts", "ViewBase"]);
    const junk = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`, {
      capabilities: ["Everything"],
    });
    expect(junk.status).toBe(422);
  });

  test("`application` creates the app the path names when it does not exist (admin keys)", async () => {
    const newUid = `${uid}-new`;
    const out = await svix.authentication.appPortalAccess(newUid, {
      application: { name: "Made by the link" },
    });
    const grant = await live(out.token);
    const app = await svix.application.get(newUid);
    expect(grant?.app_id).toBe(app.id);
    expect(app.name).toBe("Made by the link");
  });

  test("the app's own key gets a link; an unknown app is 404", async () => {
    const key = await h.call("POST", `${V1}/api-keys`, { role: "app", appId });
    const own = new Svix(key.body.key, { serverUrl: base });
    const out = await own.authentication.appPortalAccess(appId, {});
    expect((await live(out.token))?.app_id).toBe(appId);
    const ghost = await h.call("POST", `${V1}/auth/app-portal-access/app_nope`, {});
    expect(ghost.status).toBe(404);
  });

  test("HOOKRELAY_PUBLIC_URL is the link's base", async () => {
    const other = await startHarness({ publicUrl: "https://hooks.example.com" });
    try {
      const app = await other.call("POST", `${V1}/app`, { name: "x" });
      const out = await other.call("POST", `${V1}/auth/app-portal-access/${app.body.id}`);
      expect(out.body.url).toBe(`https://hooks.example.com/portal/#token=${out.body.token}`);
    } finally {
      await other.close();
    }
  });
});

describe("ending links", () => {
  test("revoke one link: listed with revokedAt, no longer live; unknown links are 404", async () => {
    const a = await svix.authentication.appPortalAccess(appId, {});
    const b = await svix.authentication.appPortalAccess(appId, {});
    const { body: made } = await h.call("POST", `${V1}/auth/app-portal-access/${appId}`);
    const revoke = await h.call("POST", `${V1}/auth/app/${appId}/portal-access/${made.id}/revoke`);
    expect(revoke.status).toBe(204);
    expect(await live(made.token)).toBeNull();
    expect(await live(a.token)).not.toBeNull();
    expect(await live(b.token)).not.toBeNull();
    const list = await h.call("GET", `${V1}/auth/app/${appId}/portal-access`);
    const row = list.body.data.find((t: { id: string }) => t.id === made.id);
    expect(row.revokedAt).not.toBeNull();
    expect(JSON.stringify(list.body)).not.toContain(made.token);
    const ghost = await h.call("POST", `${V1}/auth/app/${appId}/portal-access/ptok_nope/revoke`);
    expect(ghost.status).toBe(404);
  });

  test("svix expireAll: every live link of the app, or those with the given sessionIds", async () => {
    const tagged = await svix.authentication.appPortalAccess(appId, { sessionId: "s-1" });
    const untagged = await svix.authentication.appPortalAccess(appId, {});
    await svix.authentication.expireAll(appId, { sessionIds: ["s-1"] });
    expect(await live(tagged.token)).toBeNull();
    expect(await live(untagged.token)).not.toBeNull();
    await svix.authentication.expireAll(appId, {});
    expect(await live(untagged.token)).toBeNull();
    // with a delay, links stay valid until then
    const later = await svix.authentication.appPortalAccess(appId, {});
    await svix.authentication.expireAll(appId, { expiry: 600 });
    const grant = await live(later.token);
    expect(grant!.expires_at.getTime() - Date.now()).toBeLessThanOrEqual(600_000);
  });

  test("svix logout with the link's token as the bearer ends that link; then 401", async () => {
    const out = await svix.authentication.appPortalAccess(appId, {});
    const asLink = new Svix(out.token, { serverUrl: base });
    await asLink.authentication.logout();
    expect(await live(out.token)).toBeNull();
    const again = await asLink.authentication.logout().catch((e: unknown) => e);
    expect(again).toBeInstanceOf(ApiException);
    expect((again as ApiException<unknown>).code).toBe(401);
    // an API key is not a link
    const withKey = await h.call("POST", `${V1}/auth/logout`);
    expect(withKey.status).toBe(401);
  });

  test("the maintenance runner deletes links a day past their end, with their sessions, in every app", async () => {
    const pool = h.db.pool;
    const other = (await svix.application.create({ name: "Quiet Co" })).id;
    const links: Record<string, string> = {};
    for (const [name, app] of [
      ["expired", other],
      ["revoked", other],
      ["recent", other],
      ["live", appId],
    ] as const) {
      const { body } = await h.call("POST", `${V1}/auth/app-portal-access/${app}`);
      links[name] = body.id;
      await pool.query(
        "insert into portal_sessions (secret_hash, token_id) values ($1::text, $2::text)",
        [`session-of-${name}-${body.id}`, body.id],
      );
    }
    await pool.query(
      `update portal_tokens set expires_at = now() - interval '25 hours' where id = $1`,
      [links.expired],
    );
    await pool.query(
      `update portal_tokens set revoked_at = now() - interval '26 hours' where id = $1`,
      [links.revoked],
    );
    await pool.query(
      `update portal_tokens set expires_at = now() - interval '23 hours' where id = $1`,
      [links.recent],
    );
    await maintenanceTask(h.config, "purge-portal-links").run(pool);
    const left = async (table: string, column: string) =>
      (
        await pool.query(`select ${column} as id from ${table} where ${column} = any ($1)`, [
          Object.values(links),
        ])
      ).rows
        .map((r) => r.id)
        .sort();
    const kept = [links.recent!, links.live!].sort();
    expect(await left("portal_tokens", "id")).toEqual(kept);
    expect(await left("portal_sessions", "token_id")).toEqual(kept);
  });

  test("a link is no API key: the management API refuses it", async () => {
    const out = await svix.authentication.appPortalAccess(appId, {});
    const res = await h.api.inject({
      method: "GET",
      url: `${V1}/app/${appId}/endpoint`,
      headers: { authorization: `Bearer ${out.token}` },
    });
    expect(res.statusCode).toBe(401);
  });
});

describe("configuration", () => {
  test("frame ancestors and the public URL are checked once, at load", () => {
    expect(loadConfig({}).portalFrameAncestors).toEqual(["'self'"]);
    expect(
      loadConfig({
        HOOKRELAY_PORTAL_FRAME_ANCESTORS: "https://app.example.com, https://*.example.org:8443",
      }).portalFrameAncestors,
    ).toEqual(["https://app.example.com", "https://*.example.org:8443"]);
    for (const bad of ["https://a.example; script-src *", "'unsafe-inline'", "'none' 'self'", "*"])
      expect(() => loadConfig({ HOOKRELAY_PORTAL_FRAME_ANCESTORS: bad }), bad).toThrow(
        /FRAME_ANCESTORS/,
      );
    expect(loadConfig({ HOOKRELAY_PUBLIC_URL: "https://x.example/" }).publicUrl).toBe(
      "https://x.example",
    );
    for (const bad of ["ftp://x", "https://x.example/relay", "https://x.example/?a=1", "x"])
      expect(() => loadConfig({ HOOKRELAY_PUBLIC_URL: bad }), bad).toThrow(/PUBLIC_URL/);
  });
});
