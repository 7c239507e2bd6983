/**
 * A small SOCKS5 proxy (RFC 1928 CONNECT, RFC 1929 username/password) on a free 127.0.0.1
 * port for the egress tests: no SOCKS server ships with the CI image, and the protocol is a
 * few bytes each way. It relays real TCP and records each CONNECT's destination as asked
 * (address type and host), so a test can tell that hookrelay asked for an IP, not a name.
 */
import net from "node:net";

export interface Socks5Server {
  port: number;
  url: string;
  /** "ipv4 127.0.0.1:1234", "domain example.com:443", ... in order */
  requests: string[];
  close(): Promise<void>;
}

export async function startSocks5(auth?: {
  user: string;
  password: string;
}): Promise<Socks5Server> {
  const requests: string[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => {});
    let buffer = Buffer.alloc(0);
    let stage: "greeting" | "auth" | "request" | "relay" = "greeting";
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (stage === "greeting") {
        if (buffer.length < 2 || buffer.length < 2 + buffer[1]!) return;
        const methods = [...buffer.subarray(2, 2 + buffer[1]!)];
        buffer = buffer.subarray(2 + buffer[1]!);
        const method = auth ? 0x02 : 0x00;
        if (!methods.includes(method)) {
          client.end(Buffer.from([5, 0xff]));
          return;
        }
        client.write(Buffer.from([5, method]));
        stage = auth ? "auth" : "request";
      }
      if (stage === "auth") {
        if (buffer.length < 2) return;
        const ulen = buffer[1]!;
        if (buffer.length < 3 + ulen) return;
        const plen = buffer[2 + ulen]!;
        if (buffer.length < 3 + ulen + plen) return;
        const user = buffer.subarray(2, 2 + ulen).toString();
        const password = buffer.subarray(3 + ulen, 3 + ulen + plen).toString();
        buffer = buffer.subarray(3 + ulen + plen);
        if (user !== auth!.user || password !== auth!.password) {
          client.end(Buffer.from([1, 1]));
          return;
        }
        client.write(Buffer.from([1, 0]));
        stage = "request";
      }
      if (stage === "request") {
        if (buffer.length < 5) return;
        const type = buffer[3]!;
        const hostLength = type === 1 ? 4 : type === 4 ? 16 : 1 + buffer[4]!;
        if (buffer.length < 4 + hostLength + 2) return;
        const raw = buffer.subarray(4, 4 + hostLength);
        const host =
          type === 1
            ? [...raw].join(".")
            : type === 4
              ? (raw.toString("hex").match(/.{4}/g) ?? []).join(":")
              : raw.subarray(1).toString();
        const port = buffer.readUInt16BE(4 + hostLength);
        buffer = buffer.subarray(4 + hostLength + 2);
        requests.push(`${type === 1 ? "ipv4" : type === 4 ? "ipv6" : "domain"} ${host}:${port}`);
        stage = "relay";
        client.off("data", onData);
        client.pause();
        const upstream = net.connect(port, host);
        sockets.add(upstream);
        upstream.on("close", () => sockets.delete(upstream));
        upstream.once("connect", () => {
          client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
          if (buffer.length > 0) upstream.write(buffer);
          client.pipe(upstream);
          upstream.pipe(client);
          client.resume();
        });
        upstream.once("error", () => {
          // 5: connection refused
          client.end(Buffer.from([5, 5, 0, 1, 0, 0, 0, 0, 0, 0]));
        });
      }
    };
    client.on("data", onData);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const credentials = auth ? `${auth.user}:${auth.password}@` : "";
  return {
    port,
    url: `socks5://${credentials}127.0.0.1:${port}`,
    requests,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
