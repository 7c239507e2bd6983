/**
 * A socket to a destination through a forward proxy (docs/egress.md): an HTTP(S) proxy's
 * CONNECT tunnel, or a SOCKS5 proxy's CONNECT, to an address the SSRF guard has already
 * vetted, then TLS to the destination over the tunnel when the URL is https. Used as the
 * inner connector of security/guarded-connector.ts, which hands it the vetted IP as
 * `hostname` and the original name as `servername`: the proxy is asked for the IP, never
 * the name, so it cannot resolve the name again to a private address (DNS rebinding), and
 * the destination still sees its own name in SNI and in the Host header.
 *
 * A proxy that cannot be reached, closes, times out or refuses (407, 403, a SOCKS
 * authentication failure) fails with ProxyError (kind `proxy`: not the endpoint's fault);
 * a proxy that reached out and could not get through (502, 503, 504, a SOCKS "host
 * unreachable") fails as a connection error of the destination.
 */
import net from "node:net";
import tls from "node:tls";
import type { buildConnector } from "undici";
import { HookRelayError } from "../../errors.ts";

/** A proxy as an egress route names it. */
export interface ProxyTarget {
  protocol: "http:" | "https:" | "socks5:";
  host: string;
  port: number;
  username: string;
  password: string;
}

/** The proxy failed us (not the destination): error kind `proxy`. */
export class ProxyError extends HookRelayError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("proxy_failed", message, options);
  }
}

/** True for a ProxyError anywhere in a `cause` chain. */
export function isProxyError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof ProxyError) return true;
    if (typeof e !== "object") return false;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

export const PROXY_SCHEMES = ["http:", "https:", "socks5:"] as const;

/** Parses a proxy URL; throws an Error saying what is wrong with it. */
export function parseProxyUrl(raw: string): ProxyTarget {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error("is not a valid absolute URL");
  }
  const protocol = url.protocol as ProxyTarget["protocol"];
  if (!PROXY_SCHEMES.includes(protocol)) {
    throw new Error(
      `must use http, https or socks5, not ${url.protocol.replace(":", "") || "no scheme"}`,
    );
  }
  if (url.hostname === "") throw new Error("has no host");
  if ((url.pathname !== "" && url.pathname !== "/") || url.search || url.hash) {
    throw new Error("must be scheme://[user:password@]host[:port] with no path or query");
  }
  // without a port: the scheme's (80, 443), or SOCKS's 1080
  const port = url.port
    ? Number(url.port)
    : { "http:": 80, "https:": 443, "socks5:": 1080 }[protocol];
  return {
    protocol,
    host: url.hostname.replace(/^\[|\]$/g, ""),
    port,
    username: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
  };
}

/** The proxy URL with its password masked, for answers and logs. */
export function maskedProxyUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = "***";
    return url.toString().replace(/\/$/, "");
  } catch {
    return "***";
  }
}

export interface TunnelOptions {
  proxy: ProxyTarget;
  /**
   * Resolves and vets the proxy's host before dialling it (an endpoint's own proxy is a
   * stranger's address too); absent: dial it by name (an operator's pool or default proxy).
   */
  proxyAddress?: (host: string) => Promise<string>;
  /** local source address to bind the connection to the proxy */
  localAddress?: string;
  /** TLS to the destination: client certificate, key, CA bundle */
  tls?: tls.ConnectionOptions;
  /** ms to reach the proxy and get its answer; default 10_000 */
  timeoutMs?: number;
}

type Callback = buildConnector.Callback;

/** An undici connector that tunnels every socket through `options.proxy`. */
export function makeTunnelConnector(options: TunnelOptions): buildConnector.connector {
  const timeoutMs = options.timeoutMs ?? 10_000;
  return (opts, callback: Callback) => {
    const https = opts.protocol === "https:";
    const port = Number(opts.port) || (https ? 443 : 80);
    let done = false;
    const finish = (err: Error | null, socket: net.Socket | tls.TLSSocket | null) => {
      if (done) {
        socket?.destroy();
        return;
      }
      done = true;
      if (err) callback(err, null);
      else callback(null, socket!);
    };
    openTunnel(options, opts.hostname, port, timeoutMs).then(
      (socket) => {
        if (!https) {
          finish(null, socket);
          return;
        }
        const secure = tls.connect({
          ...options.tls,
          socket,
          // SNI and the certificate check on the name; an IP literal's certificate is
          // checked against the IP (as undici's own connector does)
          servername: opts.servername || undefined,
          host: opts.hostname,
          ALPNProtocols: ["http/1.1"],
        });
        secure.once("secureConnect", () => {
          secure.removeAllListeners("error");
          finish(null, secure);
        });
        secure.once("error", (err) => {
          socket.destroy();
          finish(err, null);
        });
      },
      (err: Error) => finish(err, null),
    );
  };
}

/** A socket connected to `host:port` through the proxy. */
async function openTunnel(
  options: TunnelOptions,
  host: string,
  port: number,
  timeoutMs: number,
): Promise<net.Socket> {
  const { proxy } = options;
  const proxyHost = options.proxyAddress ? await options.proxyAddress(proxy.host) : proxy.host;
  if (proxy.protocol === "socks5:") return socksTunnel(options, proxyHost, host, port, timeoutMs);
  return connectTunnel(options, proxyHost, host, port, timeoutMs);
}

async function socksTunnel(
  options: TunnelOptions,
  proxyHost: string,
  host: string,
  port: number,
  timeoutMs: number,
): Promise<net.Socket> {
  const { proxy } = options;
  // loaded on the first SOCKS5 tunnel: the client and its address parser cost every
  // process start about 0.15 s of CPU, and most deployments never use one
  const { SocksClient } = await import("socks");
  try {
    const { socket } = await SocksClient.createConnection({
      proxy: {
        host: proxyHost,
        port: proxy.port,
        type: 5,
        ...(proxy.username && { userId: proxy.username, password: proxy.password }),
      },
      command: "connect",
      destination: { host, port },
      timeout: timeoutMs,
      // (the socks client adds the proxy's host and port to these)
      ...(options.localAddress && {
        socket_options: { localAddress: options.localAddress, host: proxyHost, port: proxy.port },
      }),
    });
    return socket;
  } catch (err) {
    const message = (err as Error).message;
    // the proxy connected out and the destination did not answer: the destination's failure
    if (/rejected connection/i.test(message) && !/NotAllowed/i.test(message)) {
      throw Object.assign(
        new Error(`the SOCKS5 proxy could not reach ${host}:${port}: ${message}`),
        {
          code: "ECONNREFUSED",
        },
      );
    }
    throw new ProxyError(`SOCKS5 proxy ${proxy.host}:${proxy.port} failed: ${message}`, {
      cause: err,
    });
  }
}

/** Most bytes of a CONNECT answer's head read before giving up on it. */
const MAX_CONNECT_HEAD = 16 * 1024;

function connectTunnel(
  options: TunnelOptions,
  proxyHost: string,
  host: string,
  port: number,
  timeoutMs: number,
): Promise<net.Socket> {
  const { proxy } = options;
  const where = `proxy ${proxy.host}:${proxy.port}`;
  const authority = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  return new Promise((resolve, reject) => {
    const socket: net.Socket =
      proxy.protocol === "https:"
        ? tls.connect({
            host: proxyHost,
            port: proxy.port,
            servername: net.isIP(proxy.host) ? undefined : proxy.host,
            ...(options.localAddress && { localAddress: options.localAddress }),
          })
        : net.connect({
            host: proxyHost,
            port: proxy.port,
            ...(options.localAddress && { localAddress: options.localAddress }),
          });
    let head = Buffer.alloc(0);
    const fail = (err: Error) => {
      cleanup();
      socket.destroy();
      reject(err);
    };
    const timer = setTimeout(
      () => fail(new ProxyError(`no answer from the ${where} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    const onError = (err: Error) =>
      fail(new ProxyError(`cannot reach the ${where}: ${err.message}`, { cause: err }));
    const onClose = () => fail(new ProxyError(`the ${where} closed the connection`));
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > MAX_CONNECT_HEAD)
          fail(new ProxyError(`the ${where} sent no HTTP answer`));
        return;
      }
      const statusLine = head.subarray(0, head.indexOf("\r\n")).toString("latin1");
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? Number.NaN);
      if (status >= 200 && status < 300) {
        cleanup();
        const rest = head.subarray(end + 4);
        if (rest.length > 0) socket.unshift(rest);
        resolve(socket);
        return;
      }
      if (status === 502 || status === 503 || status === 504) {
        fail(
          Object.assign(new Error(`the ${where} could not reach ${authority}: ${statusLine}`), {
            code: "ECONNREFUSED",
          }),
        );
        return;
      }
      const why =
        status === 407
          ? "refused the credentials"
          : Number.isNaN(status)
            ? "sent no HTTP answer"
            : "refused the tunnel";
      fail(new ProxyError(`the ${where} ${why}: ${statusLine.slice(0, 200)}`));
    };
    function cleanup() {
      clearTimeout(timer);
      socket.off("data", onData);
      socket.off("error", onError);
      socket.off("close", onClose);
    }
    socket.on("data", onData);
    socket.on("error", onError);
    socket.on("close", onClose);
    const auth =
      proxy.username || proxy.password
        ? `Proxy-Authorization: Basic ${Buffer.from(`${proxy.username}:${proxy.password}`).toString("base64")}\r\n`
        : "";
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`);
  });
}
