/**
 * Dashboard sessions and CSRF through app.inject (docs/dashboard.md, "Sessions", "CSRF"):
 * the cookie's attributes, what a session sees, how it ends, and the refusals.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

describe("sign-in", () => {
  test("a page without a session redirects to the sign-in form, keeping where it was", async () => {
    const c = dashboardClient(h.api);
    const res = await c.get("/dashboard/endpoints?state=open");
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe(
      `/dashboard/sign-in?next=${encodeURIComponent("/dashboard/endpoints?state=open")}`,
    );
  });

  test("a valid key gives an HttpOnly, SameSite=Strict session cookie limited to /dashboard", async () => {
    const c = dashboardClient(h.api);
    const res = await c.signIn(h.adminKey);
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/dashboard");
    const set = [res.headers["set-cookie"]].flat().join("\n");
    expect(set).toMatch(
      /hookrelay_session=[\w-]{40,}; Path=\/dashboard; Max-Age=28800; HttpOnly; SameSite=Strict/,
    );
    // plain http here: not Secure (it is over https)
    expect(set).not.toMatch(/Secure/);
    const page = await c.get("/dashboard");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("<h1>Overview</h1>");
    // only the hash of the token is stored
    const token = c.cookies.get("hookrelay_session")!;
    const { rows } = await h.db.pool.query("select token_hash from dashboard_sessions");
    expect(rows.map((r) => r.token_hash)).not.toContain(token);
  });

  test("behind a TLS proxy (HOOKRELAY_PUBLIC_URL https) every dashboard cookie is Secure", async () => {
    const other = await startHarness({ publicUrl: "https://hooks.example.com" });
    try {
      const c = dashboardClient(other.api);
      const form = await c.get("/dashboard/sign-in");
      expect(String(form.headers["set-cookie"])).toMatch(/; SameSite=Strict; Secure$/);
      const res = await c.signIn(other.adminKey);
      expect(res.statusCode).toBe(303);
      const set = [res.headers["set-cookie"]].flat();
      expect(set.length).toBeGreaterThanOrEqual(2);
      for (const cookie of set) expect(cookie).toMatch(/; HttpOnly; SameSite=Strict; Secure$/);
      await c.get("/dashboard");
      // the proxy passes its own Host on: the public URL's origin is this origin too
      const elsewhere = await c.post("/dashboard/sign-out", {}, { origin: "https://evil.example" });
      expect(elsewhere.statusCode).toBe(403);
      const out = await c.post("/dashboard/sign-out", {}, { origin: "https://hooks.example.com" });
      expect(out.statusCode).toBe(303);
      expect(String(out.headers["set-cookie"])).toMatch(
        /Max-Age=0; HttpOnly; SameSite=Strict; Secure$/,
      );
    } finally {
      await other.close();
    }
  });

  test("a wrong key is refused with the form again, and no session", async () => {
    const c = dashboardClient(h.api);
    const res = await c.signIn("hr_admin_not-a-real-key");
    expect(res.statusCode).toBe(401);
    expect(res.body).toContain("That key is not valid.");
    expect(c.cookies.has("hookrelay_session")).toBe(false);
  });

  test("the sign-in form needs its double-submit token", async () => {
    const c = dashboardClient(h.api);
    await c.get("/dashboard/sign-in");
    const res = await c.post("/dashboard/sign-in", { key: h.adminKey, _csrf: "forged" });
    expect(res.statusCode).toBe(403);
    expect(c.cookies.has("hookrelay_session")).toBe(false);
  });

  test("next= goes back to a dashboard page only (no open redirect)", async () => {
    const c = dashboardClient(h.api);
    await c.get("/dashboard/sign-in");
    let res = await c.post("/dashboard/sign-in", { key: h.adminKey, next: "//evil.example/x" });
    expect(res.headers.location).toBe("/dashboard");
    await c.get("/dashboard/sign-in");
    res = await c.post("/dashboard/sign-in", { key: h.adminKey, next: "/dashboard/endpoints?x=1" });
    expect(res.headers.location).toBe("/dashboard/endpoints?x=1");
  });
});

describe("sessions end", () => {
  test("sign-out deletes the session: the same cookie no longer opens a page", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    const cookie = c.cookies.get("hookrelay_session")!;
    await c.get("/dashboard");
    const out = await c.post("/dashboard/sign-out");
    expect(out.statusCode).toBe(303);
    const again = await h.api.inject({
      method: "GET",
      url: "/dashboard",
      headers: { cookie: `hookrelay_session=${cookie}` },
    });
    expect(again.statusCode).toBe(303);
  });

  test("revoking the key ends its sessions", async () => {
    const key = await createApiKey(h.db.pool, { role: "admin" });
    const c = dashboardClient(h.api);
    await c.signIn(key.key);
    expect((await c.get("/dashboard")).statusCode).toBe(200);
    await h.call("DELETE", `/api/v1/api-keys/${key.id}`);
    expect((await c.get("/dashboard")).statusCode).toBe(303);
  });

  test("an expired session is refused", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    await h.db.pool.query("update dashboard_sessions set expires_at = now() - interval '1 second'");
    expect((await c.get("/dashboard")).statusCode).toBe(303);
  });
});

describe("CSRF", () => {
  test("a state-changing request without the session's token is refused", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    await c.get("/dashboard");
    const res = await c.post("/dashboard/sign-out", { _csrf: "" });
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain("carries no CSRF token");
    const forged = await c.post("/dashboard/sign-out", { _csrf: "x".repeat(43) });
    expect(forged.statusCode).toBe(403);
    // still signed in: nothing happened
    expect((await c.get("/dashboard")).statusCode).toBe(200);
  });

  test("a post from another origin is refused even with the token", async () => {
    const c = dashboardClient(h.api);
    await c.signIn(h.adminKey);
    await c.get("/dashboard");
    const res = await c.post("/dashboard/sign-out", {}, { origin: "https://evil.example" });
    expect(res.statusCode).toBe(403);
  });
});

describe("headers and assets", () => {
  test("every page has a CSP without inline scripts and is not cached", async () => {
    const c = dashboardClient(h.api);
    const signInPage = await c.get("/dashboard/sign-in");
    await c.signIn(h.adminKey);
    const overview = await c.get("/dashboard");
    for (const res of [signInPage, overview]) {
      const csp = String(res.headers["content-security-policy"]);
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain("unsafe-inline");
      expect(csp).not.toContain("unsafe-eval");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(res.headers["cache-control"]).toBe("no-store");
      // no inline script or style in the markup
      expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(res.body).not.toMatch(/<style|\sstyle=/);
    }
  });

  test("assets are served at versioned, immutable URLs; a stale version is 404", async () => {
    const page = (await dashboardClient(h.api).get("/dashboard/sign-in")).body;
    const urls = [...page.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)].map(
      (m) => m[1]!,
    );
    expect(urls.some((u) => u.endsWith("/htmx.js"))).toBe(true);
    expect(urls.some((u) => u.endsWith("/dashboard.css"))).toBe(true);
    for (const url of urls) {
      const res = await h.api.inject({ method: "GET", url });
      expect(res.statusCode).toBe(200);
      expect(res.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
      expect(res.body.length).toBeGreaterThan(100);
    }
    const stale = urls[0]!.replace(/assets\/[0-9a-f]+\//, "assets/000000000000/");
    expect((await h.api.inject({ method: "GET", url: stale })).statusCode).toBe(404);
  });
});
