/**
 * A client abort is a client abort (docs/reliability.md): a client that announces a body
 * and hangs up before sending all of it is logged at debug as such, is never taken for an
 * unreachable database (no "database unreachable" warning, no 503), and the server goes on
 * answering: the next requests are 200 and /healthz stays 200.
 *
 * Real PostgreSQL (one cloned database); the API listening on 127.0.0.1, spoken to with raw
 * sockets (inject() cannot hang up mid-body); its log lines captured from pino.
 */
import net from "node:net";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, test } from "vitest";
import { makeLogger } from "../src/logger.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { buildTestApi, type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";

let h: Harness;
let api: FastifyInstance;
let port = 0;
let appId = "";
/** Resolved, first in first out, when the server begins reading an aborting request's body. */
const readingBody: (() => void)[] = [];
/** Every log line the API wrote, parsed. */
const lines: { level: number; msg: string; [k: string]: unknown }[] = [];

beforeAll(async () => {
  h = await startHarness();
  appId = (await h.call("POST", `${V1}/app`, { name: "aborts" })).body.id;
  api = await buildTestApi({
    pool: h.db.pool,
    config: h.config,
    logger: makeLogger("debug", makeRedactor(), {
      write: (l: string) => void lines.push(JSON.parse(l)),
    }),
  });
  // Tells the test when the server begins reading a body: a client that hangs up before
  // then is never seen by the body parser (Fastify drops the request without a word).
  api.addHook("preParsing", async (request, _reply, payload) => {
    if (request.headers["x-test-abort"]) readingBody.shift()?.();
    return payload;
  });
  await api.listen({ port: 0, host: "127.0.0.1" });
  port = (api.server.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await api?.close();
  await h?.close();
});

/**
 * Announces a body, sends part of it (`how`: a JSON body cut short, or chunks with no last
 * chunk), then closes the socket. (Not with a reset: an RST makes the server's kernel drop
 * what was sent, and the server never sees the request at all.)
 */
async function abortMidBody(how: "length" | "chunked", path: string): Promise<void> {
  const body = `{"eventType":"abort","payload":{"x":"${"y".repeat(200)}"}}`;
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve) => socket.once("connect", resolve));
  socket.on("error", () => undefined);
  const framing =
    how === "length"
      ? `Content-Length: ${body.length + 5000}\r\n\r\n${body}`
      : `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n`;
  const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.adminKey}\r\nContent-Type: application/json\r\nX-Test-Abort: 1\r\n`;
  const reading = new Promise<void>((resolve) => readingBody.push(resolve));
  socket.write(head + framing);
  await reading;
  socket.destroy();
  await new Promise<void>((resolve) => socket.once("close", () => resolve()));
}

const aborts = () => lines.filter((l) => /client hung up/.test(l.msg));
const unreachable = () => lines.filter((l) => /database unreachable/.test(l.msg));

test("hanging up mid-body: a client abort at debug, never 'database unreachable'; the server carries on", async () => {
  const cases = [
    ["length", `${V1}/app/${appId}/msg`],
    ["chunked", `${V1}/app/${appId}/msg`],
    ["length", `${V1}/app`],
    ["chunked", `${V1}/app/${appId}/endpoint`],
  ] as const;
  for (const [i, [how, path]] of cases.entries()) {
    await abortMidBody(how, path);
    await waitFor(
      () => aborts().length + unreachable().length > i,
      10_000,
      `the server's word on abort ${how}`,
    );
    const res = await fetch(`http://127.0.0.1:${port}${V1}/app/${appId}`, {
      headers: { authorization: `Bearer ${h.adminKey}` },
    });
    expect(res.status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  }
  expect(unreachable()).toEqual([]);
  expect(aborts()).toHaveLength(cases.length);
  for (const line of aborts()) expect(line.level).toBe(20); // debug
  // nothing at warn or above about any of it
  expect(lines.filter((l) => l.level >= 40)).toEqual([]);
  // and nothing was stored from the broken bodies
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from messages where event_type = 'abort'",
  );
  expect(rows[0].n).toBe(0);
});
