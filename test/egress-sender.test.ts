/**
 * The HTTP sender's egress (docs/egress.md) against real parts on 127.0.0.1: squid as an
 * HTTP forward proxy (with basic auth), a small SOCKS5 proxy, and an https receiver that
 * requires a client certificate (a throwaway PKI made by the test).
 *
 * Names resolve through the guard's own lookup: `hooks.test` is 127.0.0.1 (allowed), and
 * `rebind.test` is 10.1.2.3 (private): the proxy is asked for the vetted IP, never the
 * name, so a name that resolves somewhere private never reaches the proxy at all.
 */
import { readFile, rm } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { EgressRoute } from "../src/delivery/egress/egress-dispatchers.ts";
import { type HttpSender, makeHttpSender } from "../src/delivery/http-sender.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { type Socks5Server, startSocks5 } from "./helpers/socks5-server.ts";
import { type Squid, squidInstalled, startSquid } from "./helpers/squid.ts";
import { makeCertificates, type TlsFiles } from "./helpers/tls-certificates.ts";

const NAMES: Record<string, string[]> = {
  "hooks.test": ["127.0.0.1"],
  localhost: ["127.0.0.1"],
  "rebind.test": ["10.1.2.3"],
};
const guard = makeSsrfGuard({
  // (the receiver's certificate names localhost only, which the guard refuses unless listed)
  allowlist: ["127.0.0.0/8", "localhost"],
  lookup: async (name) => {
    const found = NAMES[name];
    if (!found) throw Object.assign(new Error(`no such name ${name}`), { code: "ENOTFOUND" });
    return found;
  },
});
const AUTH = { user: "relay", password: "s3cret-pass" };

let squid: Squid;
let socks: Socks5Server;
let plain: http.Server;
let plainPort: number;
let mtls: https.Server;
let mtlsPort: number;
let pem: Record<"ca" | "wrongCa" | "clientCert" | "clientKey", string>;
let dir: string;
const seen: { host: string | undefined; clientCn?: string | string[] }[] = [];
const senders: HttpSender[] = [];

function sender(options: Parameters<typeof makeHttpSender>[0]["egress"] = undefined): HttpSender {
  const s = makeHttpSender({ ssrfGuard: guard, ...(options && { egress: options }) });
  senders.push(s);
  return s;
}

const route = (r: Partial<EgressRoute>): EgressRoute => ({
  key: JSON.stringify(r),
  proxyUrl: null,
  pool: null,
  tls: null,
  ...r,
});

const post = (s: HttpSender, url: string, egress?: EgressRoute) =>
  s.send({ url, headers: {}, body: "{}", timeoutMs: 10_000, ...(egress && { egress }) });

beforeAll(async () => {
  dir = path.join(tmpdir(), `hookrelay-egress-${process.pid}-${Date.now()}`);
  const files: TlsFiles = await makeCertificates(dir);
  pem = {
    ca: await readFile(files.ca, "utf8"),
    wrongCa: await readFile(files.wrongCa, "utf8"),
    clientCert: await readFile(files.clientCert, "utf8"),
    clientKey: await readFile(files.clientKey, "utf8"),
  };
  plain = http.createServer((req, res) => {
    seen.push({ host: req.headers.host });
    // (squid logs a tunnel when it closes: each answer closes its connection)
    res.setHeader("connection", "close");
    req.resume().on("end", () => res.end("ok"));
  });
  await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
  plainPort = (plain.address() as AddressInfo).port;
  mtls = https.createServer(
    {
      cert: await readFile(files.serverCert),
      key: await readFile(files.serverKey),
      ca: await readFile(files.ca),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      const cn = (req.socket as import("node:tls").TLSSocket).getPeerCertificate().subject?.CN;
      seen.push({ host: req.headers.host, clientCn: cn });
      res.setHeader("connection", "close");
      req.resume().on("end", () => res.end("ok"));
    },
  );
  await new Promise<void>((r) => mtls.listen(0, "127.0.0.1", r));
  mtlsPort = (mtls.address() as AddressInfo).port;
  socks = await startSocks5(AUTH);
  if (squidInstalled) squid = await startSquid(AUTH);
}, 60_000);

afterAll(async () => {
  for (const s of senders) await s.close();
  await squid?.stop();
  await socks?.close();
  plain?.close();
  mtls?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const squidUrl = () => `http://${AUTH.user}:${AUTH.password}@127.0.0.1:${squid.port}`;

describe.skipIf(!squidInstalled)("through squid (HTTP CONNECT)", () => {
  test("an endpoint's proxy carries the request, asked for the vetted IP; the receiver sees its name", async () => {
    const result = await post(
      sender(),
      `http://hooks.test:${plainPort}/a`,
      route({ proxyUrl: squidUrl() }),
    );
    expect(result).toMatchObject({ verdict: "success", statusCode: 200 });
    expect(seen.at(-1)?.host).toBe(`hooks.test:${plainPort}`);
    const log = await squid.logUntil((ls) =>
      ls.some((l) => l.includes(`CONNECT 127.0.0.1:${plainPort}`)),
    );
    expect(log.some((l) => l.includes(`CONNECT 127.0.0.1:${plainPort}`))).toBe(true);
    expect(log.some((l) => l.includes("hooks.test"))).toBe(false);
  });

  test("https with a client certificate through the tunnel: SNI and certificate checks on the name", async () => {
    const tls = { cert: pem.clientCert, key: pem.clientKey, ca: pem.ca };
    const result = await post(
      sender(),
      `https://localhost:${mtlsPort}/m`,
      route({ proxyUrl: squidUrl(), tls }),
    );
    expect(result).toMatchObject({ verdict: "success", statusCode: 200 });
    expect(seen.at(-1)).toEqual({ host: `localhost:${mtlsPort}`, clientCn: "certuser" });
    const connect = (l: string) => l.includes(`CONNECT localhost:${mtlsPort}`);
    expect((await squid.logUntil((ls) => ls.some(connect))).some(connect)).toBe(true);
  });

  test("https to an IP literal through the tunnel checks the certificate against that IP", async () => {
    // the receiver's certificate names localhost only: it must not pass for 127.0.0.1
    const tls = { cert: pem.clientCert, key: pem.clientKey, ca: pem.ca };
    const url = `https://127.0.0.1:${mtlsPort}/ip`;
    const result = await post(sender(), url, route({ proxyUrl: squidUrl(), tls }));
    expect(result).toMatchObject({ verdict: "transient", errorKind: "tls" });
    expect(result.error).toContain("does not name its host");
  });

  test("the process-wide proxy (HOOKRELAY_EGRESS_PROXY) carries requests without settings of their own", async () => {
    const before = (await squid.accessLog()).length;
    const result = await post(
      sender({ proxy: squidUrl(), pools: {} }),
      `http://hooks.test:${plainPort}/w`,
    );
    expect(result.verdict).toBe("success");
    const after = await squid.logUntil((ls) => ls.length > before);
    expect(after.length).toBeGreaterThan(before);
  });

  test("a pool's proxy carries its endpoints' requests", async () => {
    const before = (await squid.accessLog()).length;
    const s = sender({
      proxy: null,
      pools: {
        fixed: {
          proxy: squidUrl(),
          localAddress: null,
          publicIps: ["203.0.113.7"],
          description: "",
        },
      },
    });
    const result = await post(s, `http://hooks.test:${plainPort}/p`, route({ pool: "fixed" }));
    expect(result.verdict).toBe("success");
    const after = await squid.logUntil((ls) => ls.length > before);
    expect(after.length).toBeGreaterThan(before);
    const unknown = await post(s, `http://hooks.test:${plainPort}/p`, route({ pool: "gone" }));
    expect(unknown).toMatchObject({ verdict: "transient", errorKind: "proxy" });
    expect(unknown.error).toContain("egress pool gone is not configured");
  });

  test("DNS rebinding through the proxy: a name resolving to a private address never reaches it", async () => {
    const before = (await squid.accessLog()).length;
    const result = await post(
      sender(),
      `http://rebind.test:${plainPort}/r`,
      route({ proxyUrl: squidUrl() }),
    );
    expect(result).toMatchObject({ verdict: "permanent", errorKind: "ssrf_blocked" });
    const log = await squid.accessLog();
    expect(log.slice(before).filter((l) => /10\.1\.2\.3|rebind/.test(l))).toEqual([]);
  });

  test("wrong proxy credentials (407) are error kind proxy", async () => {
    const bad = `http://${AUTH.user}:nope@127.0.0.1:${squid.port}`;
    const result = await post(
      sender(),
      `http://hooks.test:${plainPort}/x`,
      route({ proxyUrl: bad }),
    );
    expect(result).toMatchObject({ verdict: "transient", errorKind: "proxy" });
    expect(result.error).toContain("refused the credentials");
  });
});

describe("a pool's local source address", () => {
  test("connections bind to it; one the host does not have fails as a connection error", async () => {
    const pool = (localAddress: string) => ({
      proxy: null,
      pools: { bound: { proxy: null, localAddress, publicIps: [], description: "" } },
    });
    const url = `http://hooks.test:${plainPort}/b`;
    const bound = await post(sender(pool("127.0.0.1")), url, route({ pool: "bound" }));
    expect(bound).toMatchObject({ verdict: "success", statusCode: 200 });
    // 192.0.2.1 (TEST-NET-1) is on no interface here
    const missing = await post(sender(pool("192.0.2.1")), url, route({ pool: "bound" }));
    expect(missing).toMatchObject({ verdict: "transient", errorKind: "connection" });
    expect(missing.error).toContain("EADDRNOTAVAIL");
  });
});

describe("through SOCKS5", () => {
  test("a SOCKS5 proxy is asked for the vetted IP, with credentials", async () => {
    const url = `socks5://${AUTH.user}:${AUTH.password}@127.0.0.1:${socks.port}`;
    const result = await post(
      sender(),
      `http://hooks.test:${plainPort}/s`,
      route({ proxyUrl: url }),
    );
    expect(result).toMatchObject({ verdict: "success", statusCode: 200 });
    expect(socks.requests.at(-1)).toBe(`ipv4 127.0.0.1:${plainPort}`);
    expect(seen.at(-1)?.host).toBe(`hooks.test:${plainPort}`);
  });

  test("refused SOCKS5 credentials are error kind proxy", async () => {
    const url = `socks5://${AUTH.user}:wrong@127.0.0.1:${socks.port}`;
    const result = await post(
      sender(),
      `http://hooks.test:${plainPort}/s`,
      route({ proxyUrl: url }),
    );
    expect(result).toMatchObject({ verdict: "transient", errorKind: "proxy" });
  });
});

describe("a proxy that is down", () => {
  test("nothing listening at the proxy's port is error kind proxy, not connection", async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const result = await post(
      sender(),
      `http://hooks.test:${plainPort}/d`,
      route({ proxyUrl: `http://127.0.0.1:${port}` }),
    );
    expect(result).toMatchObject({ verdict: "transient", errorKind: "proxy" });
    expect(result.error).toContain(`cannot reach the proxy 127.0.0.1:${port}`);
  });

  test("an endpoint's own proxy at a refused address is refused by the SSRF guard", async () => {
    const result = await post(
      sender(),
      `http://hooks.test:${plainPort}/d`,
      route({ proxyUrl: "http://10.9.9.9:3128" }),
    );
    expect(result).toMatchObject({ verdict: "permanent", errorKind: "ssrf_blocked" });
  });
});

describe("mTLS", () => {
  const url = () => `https://localhost:${mtlsPort}/t`;

  test("with the client certificate and the CA bundle: delivered, the receiver sees our certificate", async () => {
    const tls = { cert: pem.clientCert, key: pem.clientKey, ca: pem.ca };
    const result = await post(sender(), url(), route({ tls }));
    expect(result).toMatchObject({ verdict: "success", statusCode: 200 });
    expect(seen.at(-1)?.clientCn).toBe("certuser");
  });

  test("without a client certificate: error kind tls, saying the receiver refused the handshake", async () => {
    const result = await post(
      sender(),
      url(),
      route({ tls: { cert: null, key: null, ca: pem.ca } }),
    );
    expect(result).toMatchObject({ verdict: "transient", errorKind: "tls" });
    expect(result.error).toMatch(/TLS failed|receiver refused/);
  });

  test("the receiver's certificate from a CA we were not given: error kind tls, not trusted", async () => {
    const tls = { cert: pem.clientCert, key: pem.clientKey, ca: pem.wrongCa };
    const result = await post(sender(), url(), route({ tls }));
    expect(result).toMatchObject({ errorKind: "tls" });
    expect(result.error).toContain("not trusted");
  });
});
