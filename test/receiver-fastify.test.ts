/**
 * hookrelay/receiver's Fastify plugin in a real Fastify app on 127.0.0.1, fed by a real
 * hookrelay: each message reaches the handler once, replays and resends are acknowledged
 * without calling it, forged or stale requests get a 401 with their reason, routes outside
 * the plugin's scope keep Fastify's JSON parsing and need no signature, and the kit's own
 * failures (a parser added after it, a dedup store that fails) are a JSON 500 naming them.
 */
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { generateSecret } from "../src/delivery/sign.ts";
import { fastifyWebhookPlugin, makeMemoryDedupStore } from "../src/receiver/index.ts";
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
import { ed25519KeyPair, signedWebhook } from "./helpers/signed-webhook.ts";

const SECRET = generateSecret();
const ED = ed25519KeyPair();

let h: Harness;
let app: FastifyInstance;
let base: string;
const handled: { id: string; payload: unknown }[] = [];
const captured: Captured[] = [];
const failFirst = new Set<number>();
/** what the plugin's onError was told */
const kitErrors: unknown[] = [];
const kitLog = (err: unknown) => void kitErrors.push(err);

async function buildApp() {
  const fastify = Fastify();
  await fastify.register(async (hooks) => {
    await hooks.register(fastifyWebhookPlugin, {
      secrets: [SECRET, ED.whpk],
      dedup: makeMemoryDedupStore(),
    });
    hooks.post("/hooks", async (request, reply) => {
      const { id, payload, rawBody } = request.webhook!;
      handled.push({ id, payload });
      captured.push({ headers: webhookHeaders(request.headers), body: String(rawBody) });
      const order = (payload as { order: number }).order;
      if (failFirst.delete(order)) return reply.code(500).send({ error: "try again" });
      return { ok: true, body: request.body, scheme: request.webhook!.scheme };
    });
  });
  await fastify.register(
    async (small) => {
      await small.register(fastifyWebhookPlugin, { secret: SECRET, limitBytes: 64 });
      small.post("/hooks", async (request) => ({ id: request.webhook?.id }));
    },
    { prefix: "/small" },
  );
  // a parser added after the plugin: the signed bytes are gone
  await fastify.register(
    async (reparsed) => {
      await reparsed.register(fastifyWebhookPlugin, { secret: SECRET, onError: kitLog });
      reparsed.addContentTypeParser("application/json", { parseAs: "string" }, (_r, body, done) =>
        done(null, JSON.parse(String(body))),
      );
      reparsed.post("/hooks", async () => ({ handled: true }));
    },
    { prefix: "/reparsed" },
  );
  // a dedup store that fails
  await fastify.register(
    async (failing) => {
      await failing.register(fastifyWebhookPlugin, {
        secret: SECRET,
        onError: kitLog,
        dedup: {
          seen: async () => {
            throw new Error("connect ECONNREFUSED 10.1.2.3:5432");
          },
          markSeen: async () => true,
        },
      });
      failing.post("/hooks", async () => ({ handled: true }));
    },
    { prefix: "/failing-dedup" },
  );
  // outside the webhook scope: Fastify's own JSON parser, no verification
  fastify.post("/plain", async (request) => ({ body: request.body, webhook: request.webhook }));
  return fastify;
}

beforeAll(async () => {
  h = await startHarness();
  app = await buildApp();
  base = await app.listen({ port: 0, host: "127.0.0.1" });
  h.startWorker();
});

afterAll(async () => {
  await h?.close();
  await app?.close();
});

describe("Fastify, fed by hookrelay", () => {
  let appId: string;
  let endpointId: string;
  let msgIds: string[];

  beforeAll(async () => {
    ({ appId, endpointId } = await endpointFor(h, "fastify", `${base}/hooks`, SECRET));
  });

  test("each message reaches the handler once, with the payload's bytes as sent", async () => {
    msgIds = [];
    for (const order of [1, 2, 3]) {
      msgIds.push(await sendRaw(h, appId, `{"order": ${order}, "total": 99.50}`));
    }
    await waitFor(async () => (await deliveryStatuses(h, msgIds)).every((s) => s === "delivered"));
    expect(handled.map((x) => x.id).sort()).toEqual([...msgIds].sort());
    expect(captured.map((c) => c.body).sort()).toEqual([
      '{"order": 1, "total": 99.50}',
      '{"order": 2, "total": 99.50}',
      '{"order": 3, "total": 99.50}',
    ]);
    const attempt = (await attemptsOf(h, msgIds[0]!))[0]!;
    expect(JSON.parse(attempt.response_body!)).toEqual({
      ok: true,
      body: { order: 1, total: 99.5 },
      scheme: "v1",
    });
  });

  test("a replayed request is answered 200 and the handler is not called again", async () => {
    const before = handled.length;
    for (let i = 0; i < 2; i++) {
      expect(await post(`${base}/hooks`, captured[0]!)).toEqual({
        status: 200,
        body: { duplicate: true, id: captured[0]!.headers["webhook-id"] },
      });
    }
    expect(handled.length).toBe(before);
  });

  test("a resend from hookrelay (same id, new signature) is delivered and skipped", async () => {
    const msgId = msgIds[2]!;
    const before = handled.length;
    await resend(h, appId, msgId, endpointId);
    await waitFor(async () => (await attemptsOf(h, msgId)).length === 2, 15_000, "the resend");
    const attempts = await attemptsOf(h, msgId);
    expect(attempts.map((a) => a.status_code)).toEqual([200, 200]);
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
      ["no id", { ...good, headers: { ...good.headers, "webhook-id": "" } }, "missing_header"],
    ];
    for (const [what, request, reason] of cases) {
      const res = await post(`${base}/hooks`, request);
      expect(res.status, what).toBe(401);
      expect(res.body, what).toMatchObject({ code: "webhook_verification_failed", reason });
    }
    expect(handled.length).toBe(before);
  });
});

describe("the plugin's scope", () => {
  test("v1a (Ed25519) signatures verify beside v1 during a key change", async () => {
    const request = signedWebhook({
      id: "msg_ed",
      privateKeys: [ED.privateKey],
      body: '{"order": 20}',
    });
    const res = await post(`${base}/hooks`, request);
    expect(res).toMatchObject({ status: 200, body: { ok: true, scheme: "v1a" } });
  });

  test("any content type is kept raw, and a missing one too", async () => {
    const request = signedWebhook({ id: "msg_types", secrets: [SECRET], body: '{"order": 21}' });
    for (const type of ["text/plain", "application/x-www-form-urlencoded", undefined]) {
      const res = await fetch(`${base}/hooks`, {
        method: "POST",
        headers: { ...request.headers, ...(type && { "content-type": type }) },
        body: Buffer.from(request.body),
      });
      expect(res.status, String(type)).toBe(200);
    }
  });

  test("routes outside the scope keep JSON parsing and need no signature", async () => {
    const res = await post(`${base}/plain`, { headers: {}, body: '{"x": 1}' });
    expect(res).toEqual({ status: 200, body: { body: { x: 1 } } });
  });

  test("a body over the scope's limit is 413", async () => {
    const request = signedWebhook({
      secrets: [SECRET],
      body: JSON.stringify({ pad: "x".repeat(100) }),
    });
    expect((await post(`${base}/small/hooks`, request)).status).toBe(413);
  });
});

describe("the kit's own failures: a JSON 500 that says what to fix", () => {
  test("a content-type parser added after the plugin: raw_body_consumed, not a 401", async () => {
    const before = kitErrors.length;
    const request = signedWebhook({ id: "msg_reparsed", secrets: [SECRET], body: '{"a": 1}' });
    const res = await post(`${base}/reparsed/hooks`, request);
    expect(res.status).toBe(500);
    expect(Object.keys(res.body).sort()).toEqual(["code", "detail"]);
    expect(res.body.code).toBe("raw_body_consumed");
    expect(res.body.detail).toMatch(/content-type parser added after fastifyWebhookPlugin/);
    expect(kitErrors.slice(before)).toEqual([
      expect.objectContaining({ code: "raw_body_consumed" }),
    ]);
  });

  test("a dedup store that fails: dedup_failed, its error kept for the log, not sent", async () => {
    const before = kitErrors.length;
    const request = signedWebhook({ id: "msg_dedup_down", secrets: [SECRET], body: '{"a": 1}' });
    const res = await post(`${base}/failing-dedup/hooks`, request);
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ code: "dedup_failed" });
    expect(JSON.stringify(res.body)).not.toContain("10.1.2.3");
    const [err] = kitErrors.slice(before) as Error[];
    expect(err).toMatchObject({ code: "dedup_failed" });
    expect(err!.cause).toEqual(new Error("connect ECONNREFUSED 10.1.2.3:5432"));
  });
});
