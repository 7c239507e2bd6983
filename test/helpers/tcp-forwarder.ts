/**
 * A TCP forwarder on a free 127.0.0.1 port to a server the test runs, which the test can
 * take down (it closes every connection and refuses new ones) and bring back up on the
 * same port: a broker that goes away and comes back, without restarting the broker.
 *
 * `refuse`, when given, sees each connection's first bytes from the client (a PostgreSQL
 * client's startup message, with its application_name) and, when it answers true, the
 * connection is closed instead of carried: one kind of connection cut while the rest pass.
 */
import net from "node:net";
import { freePort } from "./broker-ports.ts";

export interface TcpForwarder {
  port: number;
  /** connections it carried so far */
  readonly connections: number;
  /** connections open now */
  readonly open: number;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpForwarder(
  targetPort: number,
  options: { refuse?: (firstBytes: Buffer) => boolean } = {},
): Promise<TcpForwarder> {
  const port = await freePort();
  const sockets = new Set<net.Socket>();
  const inbounds = new Set<net.Socket>();
  let connections = 0;
  let server: net.Server | null = null;

  async function up(): Promise<void> {
    if (server) return;
    const s = net.createServer((inbound) => {
      inbound.on("error", () => {});
      if (options.refuse === undefined) carry(inbound);
      else
        inbound.once("data", (first: Buffer) => {
          if (options.refuse!(first)) inbound.destroy();
          else carry(inbound, first);
        });
    });
    await new Promise<void>((resolve) => s.listen(port, "127.0.0.1", resolve));
    server = s;
  }

  function carry(inbound: net.Socket, first?: Buffer): void {
    connections++;
    inbounds.add(inbound);
    inbound.on("close", () => inbounds.delete(inbound));
    const outbound = net.connect(targetPort, "127.0.0.1");
    if (first) outbound.write(first);
    for (const socket of [inbound, outbound]) {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.on("close", () => {
        sockets.delete(socket);
        inbound.destroy();
        outbound.destroy();
      });
    }
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  }

  async function down(): Promise<void> {
    const s = server;
    server = null;
    for (const socket of sockets) socket.destroy();
    if (s) await new Promise((resolve) => s.close(resolve));
  }

  await up();
  return {
    port,
    get connections() {
      return connections;
    },
    get open() {
      return inbounds.size;
    },
    down,
    up,
    close: down,
  };
}
