/**
 * A bare HTTP server on 127.0.0.1 for replies the scripted receiver cannot make (dripping,
 * endless or cut-off bodies, never answering): `onRequest` gets the response once the
 * request body has been read. close() destroys open connections.
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** A bare HTTP server for replies the scripted receiver cannot make (dripping, endless bodies). */
export async function startRawServer(onRequest: (res: http.ServerResponse) => void) {
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => onRequest(res));
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
