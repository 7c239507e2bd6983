/**
 * Applications through the management API (/api/v1/app): create with and without uid, get
 * by id or uid, pagination with iterators both ways, PUT updates or creates (upsert by
 * uid), PATCH changes only the given fields, DELETE, and a duplicate uid is 409.
 *
 * The management API through app.inject, on a real PostgreSQL (one cloned database for this
 * file). Deliveries go to one real HTTP receiver on 127.0.0.1; the tests that need them
 * start a worker and stop it again when done.
 *
 * Tests named "regression ..." pin defects found in review and fixed.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  apiCalls,
  expectClientError,
  isoDate,
  type Page,
  unique,
  V1,
} from "./helpers/api-calls.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver } from "./helpers/receiver.ts";

let h: Harness;
let rx: Receiver;

beforeAll(async () => {
  // The allow-list keeps 127.0.0.1 endpoints valid once an SSRF guard checks URLs on save.
  h = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
  rx = await startReceiver();
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const { createApp } = apiCalls(() => ({ h, rx }));

describe("applications", () => {
  test("create with and without uid", async () => {
    const uid = unique("uid");
    const withUid = await h.call("POST", `${V1}/app`, {
      name: "With uid",
      uid,
      metadata: { tier: "gold" },
    });
    expect(withUid.status).toBe(201);
    expect(withUid.body).toMatchObject({ name: "With uid", uid, metadata: { tier: "gold" } });
    expect(withUid.body.id).toMatch(/^app_/);
    expect(isoDate(withUid.body.createdAt)).toBe(true);
    expect(isoDate(withUid.body.updatedAt)).toBe(true);

    const without = await h.call("POST", `${V1}/app`, { name: "No uid" });
    expect(without.status).toBe(201);
    expect(without.body).toMatchObject({ name: "No uid", uid: null, metadata: {} });
    expect(without.body.id).not.toBe(withUid.body.id);
  });

  test("get by id and by uid", async () => {
    const uid = unique("uid");
    const app = await createApp({ uid });
    const byId = await h.call("GET", `${V1}/app/${app.id}`);
    const byUid = await h.call("GET", `${V1}/app/${uid}`);
    expect(byId.status).toBe(200);
    expect(byUid.status).toBe(200);
    expect(byId.body).toEqual(app);
    expect(byUid.body).toEqual(app);
  });

  test("list pages with iterators: 3 + 3 + 1, no gaps, prevIterator pages back", async () => {
    // Its own database, so exactly these 7 applications exist.
    const h2 = await startHarness();
    try {
      const created: string[] = [];
      for (let i = 0; i < 7; i++) {
        const res = await h2.call("POST", `${V1}/app`, { name: `p${i}` });
        expect(res.status).toBe(201);
        created.push(res.body.id);
      }
      const pages: Page[] = [];
      let iterator: string | null = null;
      for (let i = 0; i < 5; i++) {
        const qs: string = iterator ? `&iterator=${encodeURIComponent(iterator)}` : "";
        const res = await h2.call("GET", `${V1}/app?limit=3${qs}`);
        expect(res.status).toBe(200);
        pages.push(res.body);
        if (res.body.done) break;
        iterator = res.body.iterator;
      }
      expect(pages.map((p) => p.data.length)).toEqual([3, 3, 1]);
      expect(pages.map((p) => p.done)).toEqual([false, false, true]);
      const seen = pages.flatMap((p) => p.data.map((a: { id: string }) => a.id));
      expect(seen).toEqual(created); // creation order, none twice, none missing
      for (const p of pages) {
        expect(p.iterator).toBe(p.data[p.data.length - 1]!.id);
        expect(p.prevIterator).toBe(`-${p.data[0]!.id}`);
      }

      // Backwards from page 3 gives page 2, from page 2 gives page 1.
      const back2 = await h2.call(
        "GET",
        `${V1}/app?limit=3&iterator=${encodeURIComponent(pages[2]!.prevIterator!)}`,
      );
      expect(back2.status).toBe(200);
      expect(back2.body.data.map((a: { id: string }) => a.id)).toEqual(created.slice(3, 6));
      const back1 = await h2.call(
        "GET",
        `${V1}/app?limit=3&iterator=${encodeURIComponent(back2.body.prevIterator)}`,
      );
      expect(back1.body.data.map((a: { id: string }) => a.id)).toEqual(created.slice(0, 3));

      // Descending order walks the same set the other way.
      const desc = await h2.call("GET", `${V1}/app?limit=250&order=descending`);
      expect(desc.body.data.map((a: { id: string }) => a.id)).toEqual([...created].reverse());
      expect(desc.body.done).toBe(true);
    } finally {
      await h2.close();
    }
  });

  test("PUT updates an existing app, and creates one for an unknown uid", async () => {
    const uid = unique("uid");
    const app = await createApp({ uid, metadata: { a: "1" } });
    const put = await h.call("PUT", `${V1}/app/${uid}`, {
      name: "Renamed",
      uid,
      metadata: { b: "2" },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ id: app.id, uid, name: "Renamed", metadata: { b: "2" } });
    expect(Date.parse(put.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(app.updatedAt));
    expect((await h.call("GET", `${V1}/app/${app.id}`)).body.name).toBe("Renamed");

    const fresh = unique("new");
    const created = await h.call("PUT", `${V1}/app/${fresh}`, { name: "Upserted" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ uid: fresh, name: "Upserted" });
    expect((await h.call("GET", `${V1}/app/${fresh}`)).body.id).toBe(created.body.id);
  });

  test("regression upsert-uid: repeated PUT by uid (uid not in the body) keeps one app", async () => {
    // svix.application.upsert(uid, { name }) sends no uid in the body. The first call
    // creates the app with the path as uid; the second must not clear it, or the third
    // call creates a second app.
    const uid = unique("upsert");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await h.call("PUT", `${V1}/app/${uid}`, { name: `v${i}` });
      ids.push(res.body.id);
    }
    expect(new Set(ids).size).toBe(1);
  });

  test("PATCH changes only the given fields", async () => {
    const uid = unique("uid");
    const app = await createApp({
      uid,
      name: "Before",
      metadata: { keep: "me" },
      throttleRate: 10,
    });
    const p1 = await h.call("PATCH", `${V1}/app/${app.id}`, { name: "After" });
    expect(p1.status).toBe(200);
    expect(p1.body).toMatchObject({
      id: app.id,
      uid,
      name: "After",
      metadata: { keep: "me" },
      throttleRate: 10,
    });
    const p2 = await h.call("PATCH", `${V1}/app/${uid}`, { metadata: { other: "x" } });
    expect(p2.status).toBe(200);
    expect(p2.body).toMatchObject({
      uid,
      name: "After",
      metadata: { other: "x" },
      throttleRate: 10,
    });
    const got = await h.call("GET", `${V1}/app/${app.id}`);
    expect(got.body).toMatchObject({
      name: "After",
      uid,
      metadata: { other: "x" },
      throttleRate: 10,
    });
  });

  test("DELETE answers 204, then the app is 404", async () => {
    const app = await createApp();
    const del = await h.call("DELETE", `${V1}/app/${app.id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeNull();
    const got = await h.call("GET", `${V1}/app/${app.id}`);
    expectClientError(got, /application/, 404);
    expect(got.body.code).toBe("not_found");
    expect((await h.call("DELETE", `${V1}/app/${app.id}`)).status).toBe(404);
  });

  test("a duplicate uid is 409, on create and on PATCH", async () => {
    const uid = unique("dup");
    await createApp({ uid });
    const dup = await h.call("POST", `${V1}/app`, { name: "again", uid });
    expectClientError(dup, /uid/, 409);
    const other = await createApp();
    const patched = await h.call("PATCH", `${V1}/app/${other.id}`, { uid });
    expectClientError(patched, /uid/, 409);
  });
});
