/**
 * A "database" that is down: a TCP server on 127.0.0.1 that closes every connection at
 * once, as a PostgreSQL that is going away does, and counts the attempts. Real sockets, so
 * the driver's real errors come back (no mock of pg).
 */
import net from "node:net";

export interface RefusingDatabase {
  url: string;
  /** connections attempted so far */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startRefusingDatabase(): Promise<RefusingDatabase> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `postgres://hookrelay:x@127.0.0.1:${port}/hookrelay`,
    get connections() {
      return connections;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
