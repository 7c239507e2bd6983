/**
 * What the broker helpers (rabbitmq.ts, nats.ts, tcp-forwarder.ts) share: a free port on
 * 127.0.0.1 and waiting until one accepts connections.
 */
import type { ChildProcess } from "node:child_process";
import net from "node:net";

export { freePort } from "../../src/lib/free-port.ts";

/** True when 127.0.0.1:port accepts a TCP connection now. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** Waits (bounded) until `ready()` says yes; fails early when `child` exits. */
export async function waitUntil(
  what: string,
  ready: () => Promise<boolean>,
  child: ChildProcess,
  withinMs: number,
  output: () => string,
): Promise<void> {
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}): ${output()}`);
    }
    if (await ready()) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} was not ready within ${withinMs} ms: ${output()}`);
}
