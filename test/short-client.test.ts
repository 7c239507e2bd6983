import net from "node:net";
import { afterAll, beforeAll, expect, inject, it } from "vitest";
import { withClient } from "../src/db/short-client.ts";

/**
 * A TCP relay in front of the test PostgreSQL that can cut every session it carries with
 * no word to either side, as haproxy's shutdown-sessions does to a server it marks down.
 */
let relay: net.Server;
const sessions = new Set<net.Socket>();
let relayUrl = "";

beforeAll(async () => {
  const target = new URL(inject("pgAdminUrl"));
  const { hostname, port } = target;
  relay = net.createServer((inbound) => {
    const outbound = net.connect(Number(port), hostname);
    for (const s of [inbound, outbound]) {
      sessions.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sessions.delete(s));
    }
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
  target.port = String((relay.address() as net.AddressInfo).port);
  relayUrl = target.toString();
});

afterAll(() => new Promise<void>((r) => relay.close(() => r())));

it("a session cut mid-statement rejects the statement and leaves the process running", async () => {
  let started = false;
  const running = withClient({ connectionString: relayUrl }, async (c) => {
    await c.query("select 1");
    started = true;
    return c.query("select pg_sleep(5)");
  }).then(
    () => null,
    (err: Error) => err,
  );
  while (!started) await new Promise((r) => setTimeout(r, 10));
  for (const s of sessions) s.destroy();
  expect((await running)?.message).toMatch(/terminated unexpectedly|ECONNRESET/);
  // pg emits the loss as an 'error' event too: without a listener that event is an
  // uncaught exception, which vitest reports as an error and fails the run on
  await new Promise((r) => setTimeout(r, 100));
});

it("a refused connection rejects", async () => {
  const closed = inject("pgAdminUrl").replace(/:\d+\//, ":1/");
  await expect(
    withClient({ connectionString: closed }, (c) => c.query("select 1")),
  ).rejects.toThrow(/ECONNREFUSED/);
});
