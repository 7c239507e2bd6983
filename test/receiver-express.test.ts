/**
 * hookrelay/receiver in a real Express 5 app on 127.0.0.1, fed by a real hookrelay (API and
 * worker on this file's test database): each message reaches the handler once, replays and
 * resends are acknowledged without calling it again, forged or stale requests get a 401 with
 * their reason, and the receiver's own PostgreSQL transaction makes effects exactly-once.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import express, { type NextFunction, type Request, type Response } from "express";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { generateSecret } from "../src/delivery/sign.ts";
import {
  createDedupTable,
  expressWebhookMiddleware,
  makeMemoryDedupStore,
  markSeen,
} from "../src/receiver/index.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";
import {
  attemptsOf,
  type Captured,
  deliveryStatuses,
  endpointFor,
  nowSec,
  post,
  resend,
  resigned,
  sendRaw,
  webhookHeaders,
} from "./helpers/receiver-kit.ts";

const SECRET = generateSecret();

let h: Harness;
let receiverDb: TestDb;
let server: http.Server;
let base: string;
const sockets = new Set<import("node:net").Socket>();

/** handler calls of /hooks: message id and parsed payload */
const handled: { id: string; payload: unknown }[] = [];
/** what /hooks received and verified, for replaying */
const captured: Captured[] = [];
/** what /pb and /pb-form handled */
const postbacks: { method: string; query: unknown; payload: unknown }[] = [];
/** /hooks answers 500 to the first delivery of these orders */
const failFirst = new Set<number>();

function buildApp() {
  const app = express();
  const verified = (req: Request) => req.webhook!;

  app.post(
    "/hooks",
    expressWebhookMiddleware({ secret: SECRET, dedup: makeMemoryDedupStore() }),
    (req: Request, res: Response) => {
      const { id, payload, rawBody } = verified(req);
      handled.push({ id, payload });
      captured.push({ headers: webhookHeaders(req.headers), body: String(rawBody) });
      const order = (payload as { order: number }).order;
      if (failFirst.delete(order)) return res.status(500).json({ error: "try again" });
      res.json({ ok: true, body: req.body });
    },
  );
  const echo = (req: Request, res: Response) =>
    res.json({ id: verified(req).id, payload: req.body, raw: String(verified(req).rawBody) });
  app.post(
    "/raw",
    express.raw({ type: "*/*" }),
    expressWebhookMiddleware({ secret: SECRET }),
    echo,
  );
  app.post(
    "/text",
    express.text({ type: "*/*" }),
    expressWebhookMiddleware({ secret: SECRET }),
    echo,
  );
  // the kit answers this mistake itself (test/receiver-express-fail-safe.test.ts); quiet here
  const quiet = { secret: SECRET, onError: () => {} };
  app.post("/parsed", express.json(), expressWebhookMiddleware(quiet), echo);
  app.post("/small", expressWebhookMiddleware({ secret: SECRET, limitBytes: 64 }), echo);

  // postbacks: a GET (values in the query, no body) and a form post
  const postback = (req: Request, res: Response) => {
    postbacks.push({ method: req.method, query: { ...req.query }, payload: req.body });
    res.type("text/plain").send("OK");
  };
  app.get("/pb", expressWebhookMiddleware({ secret: SECRET }), postback);
  app.post("/pb-form", expressWebhookMiddleware({ secret: SECRET }), postback);

  // Exactly-once effects: the seen-mark and the business write in one transaction.
  app.post(
    "/orders",
    expressWebhookMiddleware({ secret: SECRET }),
    async (req: Request, res: Response) => {
      const { id, payload } = verified(req);
      const client = await receiverDb.pool.connect();
      try {
        await client.query("begin");
        if (!(await markSeen(client, id))) {
          await client.query("rollback");
          return res.json({ duplicate: true });
        }
        await client.query("insert into orders (webhook_id, body) values ($1::text, $2::jsonb)", [
          id,
          JSON.stringify(payload),
        ]);
        await client.query("commit");
        res.json({ ok: true });
      } catch (err) {
        await client.query("rollback");
        throw err;
      } finally {
        client.release();
      }
    },
  );

  app.use(
    (
      err: Error & { status?: number; code?: string },
      _req: Request,
      res: Response,
      _next: NextFunction,
    ) => {
      res.status(err.status ?? 500).json({ code: err.code, detail: err.message });
    },
  );
  return app;
}

beforeAll(async () => {
  h = await startHarness();
  // the receiver's own database: empty, nothing of hookrelay in it
  receiverDb = await createTestDb({ template: false });
  await createDedupTable(receiverDb.pool);
  await receiverDb.pool.query(
    "create table orders (id bigint generated always as identity primary key, webhook_id text not null, body jsonb not null)",
  );
  server = http.createServer(buildApp());
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  h.startWorker();
});

afterAll(async () => {
  await h?.close();
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server?.close(resolve));
  await receiverDb?.drop();
});

describe("Express, fed by hookrelay", () => {
  let appId: string;
  let endpointId: string;
  let msgIds: string[];

  beforeAll(async () => {
    ({ appId, endpointId } = await endpointFor(h, "express", `${base}/hooks`, SECRET));
  });

  test("each message reaches the handler once, with the payload's bytes as sent", async () => {
    // 99.50 and the spacing would not survive a parse and re-serialization
    msgIds = [];
    for (const order of [1, 2, 3]) {
      msgIds.push(await sendRaw(h, appId, `{"order": ${order}, "total": 99.50}`));
    }
    await waitFor(() => handled.length >= 3, 15_000, "three deliveries");
    await waitFor(async () => (await deliveryStatuses(h, msgIds)).every((s) => s === "delivered"));
    expect(handled.map((x) => x.id).sort()).toEqual([...msgIds].sort());
    expect(captured.map((c) => c.body).sort()).toEqual([
      '{"order": 1, "total": 99.50}',
      '{"order": 2, "total": 99.50}',
      '{"order": 3, "total": 99.50}',
    ]);
    expect(handled.find((x) => x.id === msgIds[0])?.payload).toEqual({ order: 1, total: 99.5 });
  });

  test("a replayed request is answered 200 and the handler is not called again", async () => {
    const first = captured[0]!;
    const before = handled.length;
    for (let i = 0; i < 2; i++) {
      const replay = await post(`${base}/hooks`, first);
      expect(replay).toEqual({
        status: 200,
        body: { duplicate: true, id: first.headers["webhook-id"] },
      });
    }
    expect(handled.length).toBe(before);
  });

  test("a resend from hookrelay (same id, new signature) is delivered and skipped", async () => {
    const msgId = msgIds[1]!;
    const before = handled.length;
    await resend(h, appId, msgId, endpointId);
    await waitFor(async () => (await attemptsOf(h, msgId)).length === 2, 15_000, "the resend");
    const attempts = await attemptsOf(h, msgId);
    expect(attempts.map((a) => [a.outcome, a.status_code])).toEqual([
      ["success", 200],
      ["success", 200],
    ]);
    expect(JSON.parse(attempts[1]!.response_body!)).toEqual({ duplicate: true, id: msgId });
    expect(handled.length).toBe(before);
  });

  test("a delivery the handler failed is not marked seen: hookrelay's retry runs it", async () => {
    failFirst.add(4);
    const msgId = await sendRaw(h, appId, '{"order": 4}');
    await waitFor(async () => (await deliveryStatuses(h, [msgId]))[0] === "delivered");
    expect(handled.filter((x) => x.id === msgId)).toHaveLength(2);
    expect((await attemptsOf(h, msgId)).map((a) => a.status_code)).toEqual([500, 200]);
  });

  test("tampered, stale, future and wrongly signed requests are refused with 401 and a reason", async () => {
    const good = captured[0]!;
    const before = handled.length;
    const cases: [string, Captured, string][] = [
      [
        "tampered body",
        { ...good, body: good.body.replace("99.50", "0.01") },
        "no_matching_signature",
      ],
      ["old timestamp", resigned(good, SECRET, nowSec() - 600), "timestamp_too_old"],
      ["future timestamp", resigned(good, SECRET, nowSec() + 600), "timestamp_too_new"],
      ["wrong secret", resigned(good, generateSecret(), nowSec()), "no_matching_signature"],
      [
        "no signature",
        { ...good, headers: { ...good.headers, "webhook-signature": "" } },
        "missing_header",
      ],
      [
        "bad timestamp",
        { ...good, headers: { ...good.headers, "webhook-timestamp": "soon" } },
        "bad_timestamp",
      ],
    ];
    for (const [what, request, reason] of cases) {
      const res = await post(`${base}/hooks`, request);
      expect(res.status, what).toBe(401);
      expect(res.body, what).toMatchObject({ code: "webhook_verification_failed", reason });
    }
    expect(handled.length).toBe(before);
  });
});

describe("postbacks from hookrelay, verified", () => {
  test("a GET postback (no body) and a form postback pass verification and reach the handler", async () => {
    const { appId } = await endpointFor(h, "postbacks", `${base}/pb?cid={click_id}`, SECRET);
    const api = (path: string, body: unknown) =>
      h.call("POST", `/api/v1/app/${appId}${path}`, body);
    const form = await api("/endpoint", {
      url: `${base}/pb-form`,
      secret: SECRET,
      bodyFormat: "form",
      successRule: { bodyContains: ["OK"] },
    });
    expect(form.status).toBe(201);
    const list = await h.call("GET", `/api/v1/app/${appId}/endpoint`);
    const getEp = list.body.data.find((e: { url: string }) => e.url.includes("/pb?"));
    expect(
      (await h.call("PATCH", `/api/v1/app/${appId}/endpoint/${getEp.id}`, { method: "GET" }))
        .status,
    ).toBe(200);
    await sendRaw(h, appId, '{"click_id":"c/1","payout":99.50}');
    await waitFor(() => postbacks.length === 2, 15_000, "both postbacks");
    const byMethod = Object.fromEntries(postbacks.map((p) => [p.method, p]));
    expect(byMethod.GET).toEqual({ method: "GET", query: { cid: "c/1" }, payload: null });
    expect(byMethod.POST!.method).toBe("POST");
    expect({ ...(byMethod.POST!.payload as object) }).toEqual({ click_id: "c/1", payout: "99.50" });
    // both counted as delivered by hookrelay: 200 "OK", the success rule holds
    await waitFor(
      async () =>
        (
          await h.db.pool.query(
            "select count(*)::int as n from deliveries where app_id = $1 and status = 'delivered'",
            [appId],
          )
        ).rows[0].n === 2,
      10_000,
      "both delivered",
    );
  });
});

describe("Express body parsers", () => {
  const signedNow = (body: string) =>
    resigned({ headers: { "webhook-id": "msg_parsers" }, body }, SECRET, nowSec());

  test("after express.raw() or express.text() the kit takes their body", async () => {
    const request = signedNow('{"a": 1.0}');
    for (const path of ["/raw", "/text"]) {
      expect(await post(`${base}${path}`, request), path).toEqual({
        status: 200,
        body: { id: "msg_parsers", payload: { a: 1 }, raw: '{"a": 1.0}' },
      });
    }
  });

  test("after express.json() it refuses with a clear error instead of failing every signature", async () => {
    const res = await post(`${base}/parsed`, signedNow('{"a": 1.0}'));
    expect(res.status).toBe(500);
    expect(res.body.code).toBe("raw_body_consumed");
    expect(res.body.detail).toMatch(/already parsed .*express\.raw/);
  });

  test("a body over the limit is 413", async () => {
    const res = await post(`${base}/small`, signedNow(JSON.stringify({ pad: "x".repeat(100) })));
    expect(res).toMatchObject({ status: 413, body: { code: "payload_too_large" } });
  });
});

describe("exactly-once effects in the receiver's own transaction", () => {
  test("resends and concurrent replays of a message leave one order row", async () => {
    const { appId, endpointId } = await endpointFor(h, "orders", `${base}/orders`, SECRET);
    const msgIds = [
      await sendRaw(h, appId, '{"order": 10}'),
      await sendRaw(h, appId, '{"order": 11}'),
    ];
    await waitFor(async () => (await deliveryStatuses(h, msgIds)).every((s) => s === "delivered"));
    await resend(h, appId, msgIds[0]!, endpointId);
    await waitFor(async () => (await attemptsOf(h, msgIds[0]!)).length === 2, 15_000, "resend");
    // the same message signed anew, posted 8 times at once
    const again = resigned(
      { headers: { "webhook-id": msgIds[1]! }, body: '{"order": 11}' },
      SECRET,
      nowSec(),
    );
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => post(`${base}/orders`, again)),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.filter((a) => a.body.duplicate === true)).toHaveLength(8);
    const { rows } = await receiverDb.pool.query("select webhook_id, body from orders order by id");
    expect(rows).toEqual([
      { webhook_id: msgIds[0], body: { order: 10 } },
      { webhook_id: msgIds[1], body: { order: 11 } },
    ]);
  });
});
