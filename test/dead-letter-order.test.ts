/**
 * The dead-letter list is ordered by when each delivery died, the newest first, not by
 * delivery id (README.md, Operations): through the API page by page, `dlq list` and the
 * dashboard's dead-letters page with its "Older" link. The rows are seeded so that the order
 * of death and the order of ids disagree everywhere, and two die in the same instant (the
 * delivery id breaks that tie, the newer first). Paging is a position (time of death,
 * delivery), so a death or a requeue between two pages neither repeats nor skips a row.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { listenOnLoopback, runCliInProcess, show } from "./helpers/cli.ts";
import { type DashboardClient, dashboardClient } from "./helpers/dashboard-client.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import {
  ago,
  died,
  HOUR,
  MIN,
  newApp,
  newEndpoint,
  type Seeded,
  seed,
  shownDeliveryIds,
  V1,
} from "./helpers/seeded-deliveries.ts";

let h: Harness;
let dlv: (id: number) => string;
let A: string;
let ep1: { id: string };
let ep2: { id: string };
let rows: Seeded[];

/** Ages at death, in seeding (so id) order: no two neighbours in id order are in death order. */
const AGES = [3 * HOUR, 10 * MIN, 2 * HOUR, 1 * MIN, 5 * HOUR, 30 * MIN, 90 * MIN, 4 * HOUR];

/** Shown ids of `of`, the newest death first, the higher id first in a tie. */
const deathOrder = (of: Seeded[]) =>
  [...of]
    .sort((x, y) => y.updatedAt!.getTime() - x.updatedAt!.getTime() || y.deliveryId - x.deliveryId)
    .map((r) => dlv(r.deliveryId));

beforeAll(async () => {
  h = await startHarness();
  dlv = await shownDeliveryIds(h.db.pool);
  A = await newApp(h);
  ep1 = await newEndpoint(h, A);
  ep2 = await newEndpoint(h, A);
  const same = ago(45 * MIN);
  rows = await seed(h.db.pool, [
    ...AGES.map((age, i) => died(i % 2 ? ep1.id : ep2.id, ago(age), 500, 5)),
    // two deaths in the same instant
    died(ep1.id, same, 503, 5),
    died(ep2.id, same, 503, 5),
  ]);
});
afterAll(async () => {
  await h?.close();
});

async function page(query: string) {
  const res = await h.call("GET", `${V1}/dead-letters?${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as {
    data: { deliveryId: string; deadAt: string }[];
    iterator: string | null;
    done: boolean;
  };
}

async function allPages(query: string, limit: number, from: string | null = null) {
  const seen: string[] = [];
  let iterator = from;
  for (;;) {
    const body = await page(`${query}&limit=${limit}${iterator ? `&iterator=${iterator}` : ""}`);
    seen.push(...body.data.map((d) => d.deliveryId));
    if (body.done) return seen;
    iterator = body.iterator;
  }
}

describe("API", () => {
  test("the seeded order of death is not the order of ids (the fixture means what it says)", () => {
    const byId = [...rows]
      .sort((x, y) => y.deliveryId - x.deliveryId)
      .map((r) => dlv(r.deliveryId));
    expect(deathOrder(rows)).not.toEqual(byId);
  });

  test("every page in order of death, the newest first, across pages of 1, 3 and all", async () => {
    const want = deathOrder(rows);
    for (const limit of [1, 3, 50]) {
      expect(await allPages(`app_id=${A}`, limit), `limit ${limit}`).toEqual(want);
    }
    // filtered by endpoint, in the same order
    expect(await allPages(`endpoint_id=${ep1.id}`, 2)).toEqual(
      deathOrder(rows.filter((r) => r.endpointId === ep1.id)),
    );
    // deadAt descends down the list
    const times = (await page(`app_id=${A}&limit=50`)).data.map((d) => Date.parse(d.deadAt));
    expect(times).toEqual([...times].sort((x, y) => y - x));
  });

  test("a page continues from its position: a death and a requeue meanwhile change nothing before it", async () => {
    const E = await newApp(h);
    const ep = await newEndpoint(h, E);
    const mine = await seed(
      h.db.pool,
      [50, 40, 10, 30, 20].map((m) => died(ep.id, ago(m * MIN), 500, 5)),
    );
    const want = deathOrder(mine);
    const first = await page(`app_id=${E}&limit=2`);
    expect(first.data.map((d) => d.deliveryId)).toEqual(want.slice(0, 2));
    // a new death (the newest of all), and the first page's last row requeued
    const newer = await seed(h.db.pool, [died(ep.id, ago(0), 500, 5)]);
    const last = mine.find((r) => dlv(r.deliveryId) === want[1])!;
    await h.db.pool.query(
      "update deliveries set status = 'pending', updated_at = now() where id = $1::bigint",
      [last.deliveryId],
    );
    const rest = await allPages(`app_id=${E}`, 2, first.iterator);
    expect(rest).toEqual(want.slice(2));
    // a list started now has the new death first and the requeued row gone
    expect(await allPages(`app_id=${E}`, 50)).toEqual([
      dlv(newer[0]!.deliveryId),
      ...want.filter((id) => id !== want[1]),
    ]);
  });

  test("an iterator of the old form (a bare delivery id) still continues after that delivery", async () => {
    const want = deathOrder(rows);
    expect(await allPages(`app_id=${A}`, 50, want[2]!)).toEqual(want.slice(3));
  });

  test("bad iterators are 400", async () => {
    const want = deathOrder(rows);
    for (const bad of [`${want[0]}.x`, `${want[0]}.`, `${want[0]}.12345678901234567`, "msg_1.5"]) {
      const res = await h.call("GET", `${V1}/dead-letters?iterator=${encodeURIComponent(bad)}`);
      expect(res.status, bad).toBe(400);
    }
  });
});

describe("dlq list", () => {
  let dir: string;
  let server: { url: string; key: string };
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "hookrelay-dlq-order-"));
    const key = await createApiKey(h.db.pool, { role: "admin" }, "dlq order test");
    server = { url: await listenOnLoopback(h.api), key: key.key };
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test("lists in order of death, the newest first", async () => {
    const r = await runCliInProcess(["dlq", "list", "--app", A, "--json"], {
      env: { HOOKRELAY_URL: server.url, HOOKRELAY_KEY: server.key, HOOKRELAY_DATA_DIR: dir },
    });
    expect(r.code, show(r)).toBe(0);
    const listed = JSON.parse(r.stdout).map((d: { deliveryId: string }) => d.deliveryId);
    expect(listed).toEqual(deathOrder(rows));
  });
});

describe("dashboard", () => {
  let admin: DashboardClient;
  let many: Seeded[];
  let ep: { id: string };
  beforeAll(async () => {
    admin = dashboardClient(h.api);
    await admin.signIn(h.adminKey);
    const E = await newApp(h);
    ep = await newEndpoint(h, E);
    // 60 deaths (more than the page's 50), minute by minute in an order unrelated to ids
    many = await seed(
      h.db.pool,
      Array.from({ length: 60 }, (_, i) => died(ep.id, ago(((i * 37) % 60) * MIN + MIN), 500, 5)),
    );
  });

  const listed = (body: string) => {
    const table = /<table data-testid="dead-letters">[\s\S]*?<\/table>/.exec(body)![0];
    return [...table.matchAll(/<td><code>(dlv_[0-9A-Za-z]+)<\/code><\/td>/g)].map((m) => m[1]!);
  };

  test("the dead-letters page lists in order of death, and Older continues it", async () => {
    const want = deathOrder(many);
    const first = await admin.get(`/dashboard/dead-letters?endpoint_id=${ep.id}`);
    expect(first.statusCode).toBe(200);
    expect(listed(first.body)).toEqual(want.slice(0, 50));
    const older = /<a href="([^"]+)" rel="next">Older →<\/a>/.exec(first.body);
    expect(older, "an Older link").not.toBeNull();
    const second = await admin.get(older![1]!.replaceAll("&amp;", "&"));
    expect(second.statusCode).toBe(200);
    expect(listed(second.body)).toEqual(want.slice(50));
    expect(second.body).not.toContain('rel="next">Older');
  });
});
