import net from "node:net";
import { afterEach, expect, test } from "vitest";
import { ephemeralPortsFrom, freePort } from "./free-port.ts";

const servers: net.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

function listenOn(port: number): Promise<net.Server> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => {
      servers.push(server);
      resolve(server);
    });
  });
}

/** The random draw that makes freePort pick `port` (its range is 10,000 up to `below`). */
const drawing = (port: number) => (port - 10_000 + 0.5) / (ephemeralPortsFrom() - 10_000);

test("the port comes from below the kernel's ephemeral range, and can be listened on", async () => {
  const from = ephemeralPortsFrom();
  expect(from).toBeGreaterThan(1024);
  for (let i = 0; i < 5; i++) {
    const port = await freePort();
    expect(port).toBeGreaterThanOrEqual(10_000);
    expect(port).toBeLessThan(from);
    await listenOn(port);
  }
});

test("a port someone listens on is passed over", async () => {
  const taken = await freePort();
  await listenOn(taken);
  const other = taken + 1 < ephemeralPortsFrom() ? taken + 1 : taken - 1;
  const draws = [drawing(taken), drawing(other)];
  const port = await freePort("127.0.0.1", () => draws.shift() ?? Math.random());
  expect(port).not.toBe(taken);
  expect(draws).toEqual([]);
});
