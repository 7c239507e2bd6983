/**
 * The Express middleware fails safe (docs/receiver.md, When the kit fails): in a real
 * Express 5 app on 127.0.0.1 with no error handler of its own, a webhook route mounted after
 * express.json() answers a JSON 500 naming `raw_body_consumed`, never Express's HTML page
 * with a stack trace, and hookrelay stores that JSON and retries; a dedup store that fails
 * is a JSON 500 too; `forwardErrors` hands them to the app's error handler instead. And
 * README.md's Express example, run as written, verifies and deduplicates.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import express, { type NextFunction, type Request, type Response } from "express";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { generateSecret } from "../src/delivery/sign.ts";
import * as receiverKit from "../src/receiver/index.ts";
import { type DedupStore, expressWebhookMiddleware } from "../src/receiver/index.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { readmeBlock, runReadmeBlock } from "./helpers/readme-snippet.ts";
import { waitFor } from "./helpers/receiver.ts";
import { attemptsOf, endpointFor, nowSec, resigned, sendRaw } from "./helpers/receiver-kit.ts";

const SECRET = generateSecret();

let h: Harness;
const servers: http.Server[] = [];
/** what the apps' onError was told */
const kitErrors: unknown[] = [];
/** what the app's own error handler received (forwardErrors) */
const forwarded: unknown[] = [];

/** Listens on 127.0.0.1; the server is closed after the file. */
async function serve(app: express.Express): Promise<string> {
  const server = http.createServer(app);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

interface Sent {
  headers: Record<string, string>;
  body: string;
}

/** A POST whose answer is kept as text, with its content type. */
async function postText(url: string, request: Sent, contentType = "application/json") {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": contentType, ...request.headers },
    body: request.body,
  });
  return {
    status: res.status,
    contentType: res.headers.get("content-type"),
    text: await res.text(),
  };
}

const signed = (id: string, body: string): Sent =>
  resigned({ headers: { "webhook-id": id }, body }, SECRET, nowSec());

const noContent = (_req: Request, res: Response) => {
  res.sendStatus(204);
};

/** A JSON answer with no trace of an HTML page or a stack trace; its parsed body. */
function jsonAnswer(res: { contentType: string | null; text: string }) {
  expect(res.contentType).toMatch(/^application\/json/);
  expect(res.text).not.toMatch(/<html|<pre|<!DOCTYPE/i);
  expect(res.text).not.toMatch(/\bat .*\.(ts|js):\d+/);
  return JSON.parse(res.text);
}

let misordered: string;
let forwarding: string;

beforeAll(async () => {
  h = await startHarness();

  // JSON and form parsing for every route, the webhook route included: the unsafe order.
  // No error handler: Express's default one would answer an HTML page with a stack trace.
  const unsafe = express();
  unsafe.use(express.json());
  unsafe.use(express.urlencoded());
  const onError = (err: unknown) => void kitErrors.push(err);
  unsafe.post("/hooks", expressWebhookMiddleware({ secret: SECRET, onError }), noContent);
  misordered = await serve(unsafe);

  // forwardErrors: the app's own error handler answers the kit's failures
  const fwd = express();
  const forwardingMiddleware = expressWebhookMiddleware({ secret: SECRET, forwardErrors: true });
  fwd.post("/safe", forwardingMiddleware, noContent);
  fwd.use(express.json());
  fwd.post("/hooks", forwardingMiddleware, noContent);
  fwd.use((err: Error, _req: Request, res: Response, _next: NextFunction) => {
    forwarded.push(err);
    res.status(503).type("text/plain").send("the app's own error page");
  });
  forwarding = await serve(fwd);

  h.startWorker();
});

afterAll(async () => {
  await h?.close();
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

describe("after a body parser: a clear JSON 500, never Express's HTML page", () => {
  test("after express.json(), a signed request is answered 500 raw_body_consumed, saying what to fix", async () => {
    const before = kitErrors.length;
    const res = await postText(`${misordered}/hooks`, signed("msg_misordered", '{"a": 1}'));
    expect(res.status).toBe(500);
    const body = jsonAnswer(res);
    expect(Object.keys(body).sort()).toEqual(["code", "detail"]);
    expect(body.code).toBe("raw_body_consumed");
    expect(body.detail).toMatch(/express\.json\(\).*before the JSON parser.*express\.raw/s);
    // the receiver's owner is told, with the error itself
    expect(kitErrors.slice(before)).toEqual([
      expect.objectContaining({ code: "raw_body_consumed" }),
    ]);
  });

  test("a form body consumed by express.urlencoded() gets the same answer", async () => {
    const request = signed("msg_form", "a=1");
    const res = await postText(`${misordered}/hooks`, request, "application/x-www-form-urlencoded");
    expect(res.status).toBe(500);
    expect(jsonAnswer(res).code).toBe("raw_body_consumed");
  });

  test("hookrelay stores the JSON answer and retries it (a 5xx: the owner can fix the order)", async () => {
    const { appId } = await endpointFor(h, "misordered", `${misordered}/hooks`, SECRET);
    const msgId = await sendRaw(h, appId, '{"order": 1}');
    await waitFor(async () => (await attemptsOf(h, msgId)).length >= 2, 15_000, "a retry");
    for (const attempt of (await attemptsOf(h, msgId)).slice(0, 2)) {
      expect(attempt.status_code).toBe(500);
      expect(JSON.parse(attempt.response_body!)).toMatchObject({ code: "raw_body_consumed" });
    }
  });
});

describe("a dedup store that fails", () => {
  test("is answered 500 dedup_failed in JSON, its error kept for the log, not sent", async () => {
    const errors: unknown[] = [];
    const failing: DedupStore = {
      seen: async () => {
        throw new Error("connect ECONNREFUSED 10.1.2.3:5432");
      },
      markSeen: async () => true,
    };
    const app = express();
    app.post(
      "/hooks",
      expressWebhookMiddleware({
        secret: SECRET,
        dedup: failing,
        onError: (err) => void errors.push(err),
      }),
      noContent,
    );
    const base = await serve(app);
    const res = await postText(`${base}/hooks`, signed("msg_store", '{"a": 1}'));
    expect(res.status).toBe(500);
    expect(jsonAnswer(res).code).toBe("dedup_failed");
    expect(res.text).not.toContain("10.1.2.3");
    expect(errors).toEqual([expect.objectContaining({ code: "dedup_failed" })]);
    expect((errors[0] as Error).cause).toEqual(new Error("connect ECONNREFUSED 10.1.2.3:5432"));
  });
});

describe("forwardErrors: true", () => {
  test("the receiver's own failure goes to the app's error handler", async () => {
    const before = forwarded.length;
    const res = await postText(`${forwarding}/hooks`, signed("msg_fwd", '{"a": 1}'));
    expect(res).toMatchObject({ status: 503, text: "the app's own error page" });
    expect(forwarded.slice(before)).toEqual([
      expect.objectContaining({ code: "raw_body_consumed" }),
    ]);
  });

  test("a sender's mistake is still answered by the kit: 401 in JSON", async () => {
    const before = forwarded.length;
    const request = signed("msg_fwd_bad", '{"a": 1}');
    request.headers["webhook-signature"] = "v1,AAAA";
    const res = await postText(`${forwarding}/safe`, request);
    expect(res.status).toBe(401);
    expect(jsonAnswer(res)).toMatchObject({ code: "webhook_verification_failed" });
    expect(forwarded.length).toBe(before);
  });
});

describe("README.md's Express example, run as written", () => {
  test("it verifies, hands the payload over once, and answers a copy as a duplicate", async () => {
    const logged: unknown[][] = [];
    const { app } = runReadmeBlock(
      readmeBlock("expressWebhookMiddleware("),
      { express: await import("express"), "hookrelay/receiver": receiverKit },
      {
        process: { env: { WEBHOOK_SECRET: SECRET } },
        console: { log: (...args: unknown[]) => logged.push(args) },
      },
      ["app"],
    );
    const base = await serve(app as express.Express);
    const request = signed("msg_readme", '{"order": 7, "total": 99.50}');

    const first = await postText(`${base}/webhooks`, request);
    expect(first.status).toBe(204);
    expect(logged).toEqual([["msg_readme", { order: 7, total: 99.5 }]]);

    const again = await postText(`${base}/webhooks`, request);
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text)).toEqual({ duplicate: true, id: "msg_readme" });

    const tampered = await postText(`${base}/webhooks`, {
      ...request,
      body: request.body.replace("99.50", "0.01"),
    });
    expect(tampered.status).toBe(401);
    expect(JSON.parse(tampered.text)).toMatchObject({ reason: "no_matching_signature" });
    expect(logged).toHaveLength(1);
  });
});
