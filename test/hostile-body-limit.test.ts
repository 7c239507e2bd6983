/**
 * The request body limit (docs/security.md, "Input"): 1 MiB by default, configurable
 * (HOOKRELAY_BODY_LIMIT_BYTES), enforced before the body is parsed, from the Content-Length
 * header alone when it announces too much, and by cutting a chunked body off.
 *
 * Real PostgreSQL (one cloned database); the API through inject(), and through a real port
 * on 127.0.0.1 for the tests that need a socket.
 */
import net from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Fixtures, seedFixtures } from "./helpers/fuzz-fixtures.ts";
import { buildTestApi, type Harness, startHarness, testConfig } from "./helpers/harness.ts";
import { expectRefusal, REFUSAL } from "./helpers/refusals.ts";

const V1 = "/api/v1";

let h: Harness;
let fx: Fixtures;

beforeAll(async () => {
  h = await startHarness();
  fx = await seedFixtures(h);
});
afterAll(async () => {
  await h?.close();
});

describe("request body limit", () => {
  const MiB = 1024 * 1024;
  const jsonOf = (bytes: number) => `{"name":"${"x".repeat(bytes - 11)}"}`;

  test("over 1 MiB by default: 413 payload_too_large, before the body is parsed", async () => {
    expect(jsonOf(MiB + 1)).toHaveLength(MiB + 1);
    expectRefusal(await h.call("POST", `${V1}/app`, jsonOf(MiB + 1)), REFUSAL.tooLarge);
    // not JSON at all: still 413, so no parser saw it
    const junk = await h.call("POST", `${V1}/app`, "{".repeat(MiB + 10));
    expect(junk.status).toBe(REFUSAL.tooLarge.status);
    const payload = await h.call(
      "POST",
      `${V1}/app/${fx.appId}/msg`,
      `{"eventType":"big","payload":{"x":"${"y".repeat(MiB)}"}}`,
    );
    expect(payload.status).toBe(REFUSAL.tooLarge.status);
    // exactly at the limit: parsed (and refused by validation for a name this long)
    const at = await h.call("POST", `${V1}/app`, jsonOf(MiB));
    expect(at.status).toBe(REFUSAL.schema.status);
  });

  test("the limit answers from the Content-Length header alone, and cuts a chunked body off", async () => {
    await h.api.listen({ port: 0, host: "127.0.0.1" });
    const { port } = h.api.server.address() as net.AddressInfo;
    const head = (extra: string) =>
      `POST ${V1}/app HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${h.adminKey}\r\nContent-Type: application/json\r\n${extra}\r\n`;

    // 5 MiB announced, not one body byte sent: the answer comes anyway
    const announced = await rawExchange(port, (s) => s.write(head("Content-Length: 5242880\r\n")));
    expect(announced).toMatch(new RegExp(`^HTTP/1\\.1 ${REFUSAL.tooLarge.status} `));

    // chunked, no length: cut off once past the limit
    const chunked = await rawExchange(port, (s) => {
      s.write(head("Transfer-Encoding: chunked\r\n"));
      const chunk = "x".repeat(64 * 1024);
      for (let i = 0; i < 20; i++) s.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    });
    expect(chunked).toMatch(new RegExp(`^HTTP/1\\.1 ${REFUSAL.tooLarge.status} `));
  });

  test("a configured smaller limit (HOOKRELAY_BODY_LIMIT_BYTES) is enforced the same way", async () => {
    const small = await buildTestApi({
      pool: h.db.pool,
      config: testConfig({ databaseUrl: h.db.url, bodyLimitBytes: 2048 }),
    });
    try {
      const post = (payload: string) =>
        small.inject({
          method: "POST",
          url: `${V1}/app`,
          headers: { authorization: `Bearer ${h.adminKey}`, "content-type": "application/json" },
          payload,
        });
      expect((await post(jsonOf(2049))).statusCode).toBe(REFUSAL.tooLarge.status);
      expect((await post("{".repeat(3000))).statusCode).toBe(REFUSAL.tooLarge.status);
      expect((await post(jsonOf(2048))).statusCode).toBe(REFUSAL.schema.status);
      expect((await post('{"name":"small enough"}')).statusCode).toBe(201);
    } finally {
      await small.close();
    }
  });
});

/** Opens a socket, lets `send` write, returns what the server answers within 5 s. */
function rawExchange(port: number, send: (s: net.Socket) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let data = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(data);
    }, 5_000);
    socket.on("connect", () => send(socket));
    socket.on("data", (d) => {
      data += d.toString("latin1");
      if (/\r\n\r\n/.test(data)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(data);
      }
    });
    socket.on("error", (err) => {
      clearTimeout(timer);
      if (data) resolve(data);
      else if (
        (err as { code?: string }).code === "ECONNRESET" ||
        (err as { code?: string }).code === "EPIPE"
      )
        resolve(data);
      else reject(err);
    });
  });
}
