/**
 * A real HTTP receiver on 127.0.0.1 that records every request. Behaviour per request is
 * set by a handler (status, headers, body, delay, hang), so tests script endpoint faults.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  /** never answer (until the server closes) */
  hang?: boolean;
}

export interface Receiver {
  url: string;
  requests: Received[];
  /** requests to one path */
  on(path: string): Received[];
  close(): Promise<void>;
}

export async function startReceiver(
  handler: (req: Received, index: number) => Reply | Promise<Reply> = () => ({ status: 200 }),
): Promise<Receiver> {
  const requests: Received[] = [];
  const sockets = new Set<import("node:net").Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const received: Received = {
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      };
      requests.push(received);
      const reply = await handler(received, requests.length - 1);
      if (reply.hang) return;
      if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
      res.writeHead(reply.status ?? 200, reply.headers ?? {});
      res.end(reply.body ?? "ok");
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    on: (path) => requests.filter((r) => r.path === path),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Polls `check` until it returns true or the time runs out. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
  what = "condition",
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}
