/**
 * A free TCP port for a server another process will start (the embedded PostgreSQL, and the
 * tests' and fault suite's brokers, proxies and clusters), on `host`.
 *
 * The usual way (listen on port 0, read the port, close) takes the port from the kernel's
 * ephemeral range, the same range every outgoing connection's local port comes from: in the
 * seconds before the other process binds it, any connection made meanwhile can be given that
 * port, and the server fails with "address already in use" (seen with Patroni's REST port in
 * a full test run). So a port is drawn at random from below that range (on Linux,
 * /proc/sys/net/ipv4/ip_local_port_range; elsewhere below 32768, Linux's default), where the
 * kernel hands out none, and checked by binding it; one that is taken is passed over. Two
 * callers then collide only by drawing the same port among thousands at the same moment.
 * Without such a range (a system whose ephemeral ports start low), the kernel picks.
 */
import { readFileSync } from "node:fs";
import net from "node:net";

/** the lowest port drawn from; below it are the well-known and registered services' ports */
const LOWEST = 10_000;
const TRIES = 20;

/** The first port of the kernel's ephemeral range (Linux); 32768 where it cannot be read. */
export function ephemeralPortsFrom(): number {
  try {
    const [from] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (from !== undefined && Number.isInteger(from) && from > 0) return from;
  } catch {
    // not Linux: the default below
  }
  return 32_768;
}

/** The port listened on at `host` (`port`, or the kernel's pick for 0), closed again; null when taken. */
function bindable(port: number, host: string): Promise<number | null> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(null));
    server.listen(port, host, () => {
      const bound = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

export async function freePort(
  host = "127.0.0.1",
  random: () => number = Math.random,
): Promise<number> {
  const below = ephemeralPortsFrom();
  if (below - LOWEST >= 1_000) {
    for (let i = 0; i < TRIES; i++) {
      const port = LOWEST + Math.floor(random() * (below - LOWEST));
      if ((await bindable(port, host)) !== null) return port;
    }
  }
  const port = await bindable(0, host);
  if (port === null) throw new Error(`no free port on ${host}`);
  return port;
}
