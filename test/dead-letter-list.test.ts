/**
 * Dead letters, read (docs/operations.md): GET /dead-letters (every field of a row; filters by app,
 * endpoint id or uid, status code, error kind and time range; cursor pagination with
 * dlv_ iterators; bad input) and GET /dead-letters/analysis (each failure pattern detected
 * from a fixture built for it, the list's filters, an outage straddling a quarter-hour).
 *
 * Rows are seeded straight into the database (test/helpers/seeded-deliveries.ts) with
 * chosen statuses, timestamps, status codes and error kinds, so each figure has an exact
 * expected value. Every test scopes by its own app or endpoint.
 *
 * Tests with a "Regression:" comment pin defects found while writing them, since fixed.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PATTERNS } from "../src/ops/dead-letter-patterns.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import {
  ago,
  DAY,
  died,
  HOUR,
  MIN,
  newApp,
  newEndpoint,
  type Seeded,
  type SeedRow,
  seed,
  shownDeliveryIds,
  unique,
  V1,
} from "./helpers/seeded-deliveries.ts";

describe("dead letters", () => {
  let h: Harness;
  /** a delivery's id as the API shows it */
  let dlv: (id: number) => string;

  beforeAll(async () => {
    h = await startHarness();
    dlv = await shownDeliveryIds(h.db.pool);
  });
  afterAll(async () => {
    await h?.close();
  });

  // ------------------------------------------------------------------------ list

  describe("list", () => {
    let P: string;
    let Q: string;
    let p1: Awaited<ReturnType<typeof newEndpoint>>;
    let p2: Awaited<ReturnType<typeof newEndpoint>>;
    let q1: Awaited<ReturnType<typeof newEndpoint>>;
    let d: Seeded[];

    beforeAll(async () => {
      P = await newApp(h);
      Q = await newApp(h);
      p1 = await newEndpoint(h, P, { uid: unique("p1") });
      p2 = await newEndpoint(h, P);
      q1 = await newEndpoint(h, Q);
      // index:  0: p1 500 3h  1: p1 500 2h  2: p1 timeout 1h  3: p1 401 30m  4: p2 503 10m
      //         5: p2 connection 5m  6: q1 500 20m
      d = await seed(h.db.pool, [
        died(p1.id, ago(3 * HOUR), 500, 5),
        died(p1.id, ago(2 * HOUR), 500, 4),
        died(p1.id, ago(HOUR), "timeout", 3),
        died(p1.id, ago(30 * MIN), 401, 1),
        died(p2.id, ago(10 * MIN), 503, 5),
        died(p2.id, ago(5 * MIN), "connection", 5),
        died(q1.id, ago(20 * MIN), 500, 5),
        // not dead letters: never listed, whatever their last answer
        {
          endpointId: p1.id,
          status: "failed",
          code: 500,
          kind: "http",
          nextAttemptAt: new Date(Date.now() + DAY),
        },
        { endpointId: p1.id, status: "delivered", code: 500, kind: "http", updatedAt: ago(MIN) },
        { endpointId: p1.id, status: "canceled", code: 500, kind: "http" },
      ]);
    });

    const ids = (body: { data: { deliveryId: string }[] }) => body.data.map((x) => x.deliveryId);
    /** Expected ids, the newest death first, of fixture rows by index. */
    const want = (...idx: number[]) =>
      idx
        .map((i) => d[i]!)
        .sort((x, y) => y.updatedAt!.getTime() - x.updatedAt!.getTime())
        .map((r) => dlv(r.deliveryId));

    test("every field of a listed dead letter", async () => {
      const res = await h.call("GET", `${V1}/dead-letters?endpoint_id=${p1.id}&status_code=401`);
      expect(res.status).toBe(200);
      const row = d[3]!;
      expect(res.body).toEqual({
        data: [
          {
            deliveryId: dlv(row.deliveryId),
            messageId: row.messageId,
            endpointId: p1.id,
            appId: P,
            eventType: "seeded.event",
            url: p1.url,
            attempts: 1,
            statusCode: 401,
            errorKind: "credentials",
            error: "HTTP 401",
            deadAt: row.updatedAt!.toISOString(),
          },
        ],
        // the position: the delivery and when it died, in microseconds
        iterator: `${dlv(row.deliveryId)}.${row.updatedAt!.getTime()}000`,
        prevIterator: null,
        done: true,
      });
    });

    test("filters: app, endpoint (id or uid), status code, error kind, time range", async () => {
      const get = async (q: string) => {
        const res = await h.call("GET", `${V1}/dead-letters?${q}`);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        return ids(res.body);
      };
      expect(await get(`app_id=${P}`)).toEqual(want(0, 1, 2, 3, 4, 5));
      expect(await get(`app_id=${Q}`)).toEqual(want(6));
      expect(await get(`endpoint_id=${p1.id}`)).toEqual(want(0, 1, 2, 3));
      const uid = (await h.call("GET", `${V1}/app/${P}/endpoint/${p1.id}`)).body.uid;
      expect(await get(`endpoint_id=${uid}`)).toEqual(want(0, 1, 2, 3));
      expect(await get(`app_id=${P}&status_code=500`)).toEqual(want(0, 1));
      expect(await get(`endpoint_id=${p2.id}&status_code=503`)).toEqual(want(4));
      expect(await get(`app_id=${P}&error_kind=timeout`)).toEqual(want(2));
      expect(await get(`app_id=${P}&error_kind=connection`)).toEqual(want(5));
      const t = (ms: number) => encodeURIComponent(ago(ms).toISOString());
      expect(await get(`app_id=${P}&since=${t(90 * MIN)}`)).toEqual(want(2, 3, 4, 5));
      expect(await get(`app_id=${P}&until=${t(90 * MIN)}`)).toEqual(want(0, 1));
      expect(await get(`app_id=${P}&since=${t(150 * MIN)}&until=${t(15 * MIN)}`)).toEqual(
        want(1, 2, 3),
      );
      // filters combine
      expect(await get(`app_id=${P}&status_code=500&since=${t(150 * MIN)}`)).toEqual(want(1));
      expect(await get(`app_id=${P}&error_kind=nonesuch`)).toEqual([]);
      // an endpoint of another app than the one named is not found in that app
      const elsewhere = await h.call("GET", `${V1}/dead-letters?app_id=${Q}&endpoint_id=${p1.id}`);
      expect([elsewhere.status, elsewhere.body.code]).toEqual([404, "not_found"]);
    });

    test("cursor pagination: the iterator is the last row's delivery and time of death", async () => {
      const seen: string[] = [];
      let iterator: string | null = null;
      let pages = 0;
      for (;;) {
        const res = await h.call(
          "GET",
          `${V1}/dead-letters?app_id=${P}&limit=4${iterator ? `&iterator=${iterator}` : ""}`,
        );
        expect(res.status).toBe(200);
        pages++;
        seen.push(...ids(res.body));
        expect(res.body.data.length).toBeLessThanOrEqual(4);
        if (res.body.done) break;
        expect(res.body.iterator).toMatch(/^dlv_[A-V][0-9A-Za-z]{10}\.[0-9]{16}$/);
        iterator = res.body.iterator;
      }
      expect(pages).toBe(2);
      expect(seen).toEqual(want(0, 1, 2, 3, 4, 5));

      const two = await h.call("GET", `${V1}/dead-letters?app_id=${P}&limit=2`);
      expect(ids(two.body)).toEqual(want(4, 5));
      expect(two.body.done).toBe(false);
      expect(two.body.iterator).toBe(`${want(4, 5)[1]}.${d[4]!.updatedAt!.getTime()}000`);
    });

    test("bad input: an iterator that is no delivery id, an unknown endpoint or app", async () => {
      expect((await h.call("GET", `${V1}/dead-letters?iterator=msg_123`)).status).toBe(400);
      expect((await h.call("GET", `${V1}/dead-letters?endpoint_id=ep_nonesuch`)).status).toBe(404);
      expect((await h.call("GET", `${V1}/dead-letters?app_id=app_nonesuch`)).status).toBe(404);
      expect((await h.call("GET", `${V1}/dead-letters?status_code=abc`)).status).toBe(422);
    });
  });

  // --------------------------------------------------------------------- analysis

  describe("analysis and patterns", () => {
    let PAT: string;
    const fixtures: Record<string, { endpoint: { id: string; url: string }; rows: Seeded[] }> = {};
    /** A 15-minute boundary (aligned like date_bin) about two hours ago. */
    const bin15 = Math.floor((Date.now() - 2 * HOUR) / (15 * MIN)) * 15 * MIN;

    beforeAll(async () => {
      PAT = await newApp(h);
      const spec: Record<string, SeedRow[]> = {};
      const ep: Record<string, { id: string; url: string }> = {};
      for (const name of ["credentials", "rate_limited", "outage", "intermittent", "mixed"]) {
        ep[name] = await newEndpoint(h, PAT);
      }
      // credentials: 6 dead over 3 hours, five of them 401/403
      spec.credentials = [
        died(ep.credentials!.id, ago(3 * HOUR), 401, 1),
        died(ep.credentials!.id, ago(150 * MIN), 401, 1),
        died(ep.credentials!.id, ago(2 * HOUR), 500, 5),
        died(ep.credentials!.id, ago(90 * MIN), 403, 1),
        died(ep.credentials!.id, ago(HOUR), 401, 1),
        died(ep.credentials!.id, ago(10 * MIN), 401, 2),
      ];
      // rate_limited: 4 dead over 2 hours, three of them 429
      spec.rate_limited = [
        died(ep.rate_limited!.id, ago(2 * HOUR), 429, 5),
        died(ep.rate_limited!.id, ago(HOUR), 429, 5),
        died(ep.rate_limited!.id, ago(40 * MIN), 500, 5),
        died(ep.rate_limited!.id, ago(20 * MIN), 429, 4),
      ];
      // outage: 10 within ten minutes (inside one aligned 15-minute window), and two
      // stragglers one and two days earlier
      spec.outage = [
        ...Array.from({ length: 10 }, (_, i) =>
          died(ep.outage!.id, new Date(bin15 + 2 * MIN + i * MIN), i < 6 ? 502 : "connection", 5),
        ),
        died(ep.outage!.id, ago(DAY), 500, 5),
        died(ep.outage!.id, ago(2 * DAY), 500, 5),
      ];
      // intermittent: three a day for four days, at 2h, 9h and 17h past the day mark
      const codes = [400, 422, 500, 400, 422, 500, 400, 422, 500, 400, 422, 400];
      spec.intermittent = [0, 1, 2, 3].flatMap((day) =>
        [2, 9, 17].map((hour, j) =>
          died(ep.intermittent!.id, ago(day * DAY + hour * HOUR + 7 * MIN), codes[day * 3 + j]!, 5),
        ),
      );
      // mixed: 5 dead over 3 hours: 500, 500, 401, 429, timeout
      spec.mixed = [
        died(ep.mixed!.id, ago(3 * HOUR), 500, 5),
        died(ep.mixed!.id, ago(2 * HOUR), 401, 1),
        died(ep.mixed!.id, ago(100 * MIN), 429, 5),
        died(ep.mixed!.id, ago(HOUR), "timeout", 5),
        died(ep.mixed!.id, ago(15 * MIN), 500, 4),
      ];
      for (const [name, rows] of Object.entries(spec)) {
        fixtures[name] = { endpoint: ep[name]!, rows: await seed(h.db.pool, rows) };
      }
    });

    /** The expected analysis of a fixture, computed from its rows. */
    function expected(name: string, mostCommonError: string, mostCommonStatusCode: number) {
      const { endpoint, rows } = fixtures[name]!;
      const times = rows.map((r) => r.updatedAt!.getTime());
      const attempts = rows.map((r) => r.attempts!);
      const pattern = PATTERNS.find((p) => p.pattern === name);
      return {
        endpointId: endpoint.id,
        appId: PAT,
        url: endpoint.url,
        deadCount: rows.length,
        mostCommonError,
        mostCommonStatusCode,
        firstDeadAt: new Date(Math.min(...times)).toISOString(),
        lastDeadAt: new Date(Math.max(...times)).toISOString(),
        averageAttempts:
          Math.round((attempts.reduce((a, b) => a + b, 0) / attempts.length) * 100) / 100,
        pattern: name,
        suggestedAction: pattern
          ? pattern.suggestedAction
          : expect.stringMatching(/No single cause/),
      };
    }

    test("each pattern detected from a fixture built for it, with every analysis field", async () => {
      const res = await h.call("GET", `${V1}/dead-letters/analysis?app_id=${PAT}`);
      expect(res.status).toBe(200);
      // most dead first: gradual 12 and outage 12 (tie: endpoint id order), credentials 6, mixed 5, rate 4
      const byCount = [...res.body.data].map((a: { pattern: string }) => a.pattern);
      expect(byCount.slice(2)).toEqual(["credentials", "mixed", "rate_limited"]);
      expect(byCount.slice(0, 2).sort()).toEqual(["intermittent", "outage"]);
      const get = (p: string) => res.body.data.find((a: { pattern: string }) => a.pattern === p);
      expect(get("credentials")).toEqual(expected("credentials", "HTTP 401", 401));
      expect(get("rate_limited")).toEqual(expected("rate_limited", "HTTP 429", 429));
      expect(get("outage")).toEqual(expected("outage", "HTTP 502", 502));
      expect(get("intermittent")).toEqual(expected("intermittent", "HTTP 400", 400));
      expect(get("mixed")).toEqual(expected("mixed", "HTTP 500", 500));
      // averages worked out by hand for two of them
      expect(get("credentials").averageAttempts).toBe(1.83); // 11 / 6
      expect(get("rate_limited").averageAttempts).toBe(4.75); // 19 / 4
    });

    test("the analysis in pages: limit and iterator continue the ranking, endpointTotal on every page", async () => {
      const all = (await h.call("GET", `${V1}/dead-letters/analysis?app_id=${PAT}`)).body;
      expect(all.endpointTotal).toBe(all.data.length);
      expect(all.done).toBe(true);
      const ids = all.data.map((a: { endpointId: string }) => a.endpointId);
      const seen: string[] = [];
      let iterator: string | null = null;
      for (let pages = 1; ; pages++) {
        const res = await h.call(
          "GET",
          `${V1}/dead-letters/analysis?app_id=${PAT}&limit=2${iterator ? `&iterator=${iterator}` : ""}`,
        );
        expect(res.status).toBe(200);
        expect(res.body.endpointTotal).toBe(ids.length);
        expect(res.body.data.length).toBeLessThanOrEqual(2);
        seen.push(...res.body.data.map((a: { endpointId: string }) => a.endpointId));
        if (res.body.done) {
          expect(res.body.iterator).toBeNull();
          expect(pages).toBe(Math.ceil(ids.length / 2));
          break;
        }
        iterator = res.body.iterator;
      }
      expect(seen).toEqual(ids);
      const past = await h.call("GET", `${V1}/dead-letters/analysis?app_id=${PAT}&iterator=999`);
      expect(past.body).toMatchObject({ data: [], endpointTotal: ids.length, done: true });
      for (const bad of ["limit=0", "limit=x", "iterator=-1", "iterator=abc"]) {
        const res = await h.call("GET", `${V1}/dead-letters/analysis?${bad}`);
        expect(res.status, bad).toBe(422);
      }
    });

    test("the analysis takes the list's filters: one endpoint, a time range", async () => {
      const outage = fixtures.outage!.endpoint.id;
      const one = await h.call("GET", `${V1}/dead-letters/analysis?endpoint_id=${outage}`);
      expect(one.body.data).toHaveLength(1);
      expect(one.body.data[0]).toEqual(expected("outage", "HTTP 502", 502));

      // Only the last 5 hours of the gradual endpoint: a single death, no longer "gradual"
      const gradual = fixtures.intermittent!.endpoint.id;
      const since = encodeURIComponent(ago(5 * HOUR).toISOString());
      const recent = await h.call(
        "GET",
        `${V1}/dead-letters/analysis?endpoint_id=${gradual}&since=${since}`,
      );
      expect(recent.body.data).toHaveLength(1);
      expect(recent.body.data[0]).toMatchObject({ deadCount: 1, pattern: "mixed" });

      // Only 401s of the credentials endpoint
      const cred = fixtures.credentials!.endpoint.id;
      const only401 = await h.call(
        "GET",
        `${V1}/dead-letters/analysis?endpoint_id=${cred}&status_code=401`,
      );
      expect(only401.body.data[0]).toMatchObject({
        deadCount: 4,
        mostCommonStatusCode: 401,
        pattern: "credentials",
      });

      // Nothing matches: an empty list
      const none = await h.call(
        "GET",
        `${V1}/dead-letters/analysis?endpoint_id=${cred}&status_code=418`,
      );
      expect(none.body).toEqual({ data: [], endpointTotal: 0, iterator: null, done: true });
    });

    // Regression: "the most dead letters inside any 15-minute window" was counted in fixed,
    // clock-aligned bins, so an outage straddling a quarter-hour mark was split in two and
    // reported "mixed"; it is now a sliding window (src/ops/dead-letters.ts).
    test("an outage that straddles a quarter-hour boundary is still an outage", async () => {
      const ep = await newEndpoint(h, PAT);
      const boundary = bin15 - 3 * HOUR; // a quarter-hour mark five hours ago
      await seed(
        h.db.pool,
        Array.from({ length: 10 }, (_, i) =>
          died(ep.id, new Date(boundary - 5 * MIN + i * MIN + 30_000), 503, 5),
        ),
      );
      const res = await h.call("GET", `${V1}/dead-letters/analysis?endpoint_id=${ep.id}`);
      expect(res.body.data[0]).toMatchObject({ deadCount: 10, pattern: "outage" });
    });
  });
});
