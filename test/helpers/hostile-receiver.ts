/**
 * A receiver that answers like a hostile or broken server: a TCP server on 127.0.0.1 that
 * reads each HTTP request itself and writes whatever bytes a path's behaviour chooses
 * (binary and compressed bodies, NUL bytes, garbage status lines, absurd headers, endless
 * or dripping bodies). It records the `webhook-id` of every request per path.
 */
import net from "node:net";

/** What a path does with a request: writes to the socket and ends or destroys it. */
export type Behaviour = (socket: net.Socket) => void;

export interface HostileReceiver {
  url: string;
  /** a fresh path answered by `behaviour` */
  route(behaviour: Behaviour): string;
  /** webhook-ids of the requests to `path`, in arrival order */
  arrivals(path: string): string[];
  close(): Promise<void>;
}

/** A complete response with the given status line, headers and body; the connection closes. */
export function rawResponse(
  statusLine: string,
  body: Buffer | string = "",
  headers: Record<string, string> = {},
): Behaviour {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
  const head = [
    statusLine,
    `Content-Length: ${bytes.length}`,
    "Connection: close",
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ].join("\r\n");
  return (socket) => socket.end(Buffer.concat([Buffer.from(`${head}\r\n\r\n`, "latin1"), bytes]));
}

/** Bytes written as they are (no framing of ours), then the connection closes. */
export function rawBytes(bytes: Buffer | string): Behaviour {
  return (socket) => socket.end(bytes);
}

/** A 200 with a chunked body that goes on until the client hangs up (at most `maxBytes`). */
export function endlessBody(maxBytes = 64 * 1024 * 1024): Behaviour {
  return (socket) => {
    socket.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
    const chunk = Buffer.alloc(16 * 1024, "z");
    const frame = Buffer.concat([
      Buffer.from(`${chunk.length.toString(16)}\r\n`),
      chunk,
      Buffer.from("\r\n"),
    ]);
    let sent = 0;
    const pump = () => {
      while (!socket.destroyed && sent < maxBytes) {
        sent += chunk.length;
        if (!socket.write(frame)) return void socket.once("drain", pump);
      }
      socket.destroy();
    };
    pump();
  };
}

/** A 200 whose body drips one byte every `everyMs` (bounded: 600 bytes at most). */
export function drippingBody(everyMs: number): Behaviour {
  return (socket) => {
    socket.write("HTTP/1.1 200 OK\r\nContent-Length: 600\r\nConnection: close\r\n\r\n");
    let left = 600;
    const timer = setInterval(() => {
      if (socket.destroyed || left-- <= 0) {
        clearInterval(timer);
        socket.destroy();
        return;
      }
      socket.write("x");
    }, everyMs);
    socket.once("close", () => clearInterval(timer));
  };
}

export async function startHostileReceiver(): Promise<HostileReceiver> {
  const behaviours = new Map<string, Behaviour>();
  const seen = new Map<string, string[]>();
  const sockets = new Set<net.Socket>();
  let counter = 0;

  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let buffered = Buffer.alloc(0);
    const onData = (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      const headEnd = buffered.indexOf("\r\n\r\n");
      if (headEnd < 0) return;
      const head = buffered.subarray(0, headEnd).toString("latin1").split("\r\n");
      const [, path = ""] = (head[0] ?? "").split(" ");
      const headers = new Map(
        head.slice(1).map((line) => {
          const at = line.indexOf(":");
          return [line.slice(0, at).trim().toLowerCase(), line.slice(at + 1).trim()] as const;
        }),
      );
      const length = Number(headers.get("content-length") ?? 0);
      if (buffered.length < headEnd + 4 + length) return;
      socket.off("data", onData);
      const list = seen.get(path) ?? [];
      list.push(headers.get("webhook-id") ?? "");
      seen.set(path, list);
      const behaviour = behaviours.get(path) ?? rawResponse("HTTP/1.1 404 Not Found");
      behaviour(socket);
    };
    socket.on("data", onData);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    route(behaviour) {
      const path = `/hostile-${++counter}`;
      behaviours.set(path, behaviour);
      return path;
    },
    arrivals: (path) => seen.get(path) ?? [],
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
