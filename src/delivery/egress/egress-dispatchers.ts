/**
 * Which undici dispatcher an HTTP attempt goes out through (docs/egress.md): the sender's
 * one Agent for every request without egress settings, else an Agent per set of settings
 * (an endpoint's own proxy, an egress pool, a client certificate or CA bundle), made on
 * first use and kept, so each keeps its connections alive like the shared one.
 *
 * Every Agent connects through the SSRF guard (security/guarded-connector.ts): the
 * destination's address is resolved and vetted by hookrelay, and a proxy is asked for that
 * address (proxy-tunnel.ts). An endpoint's own proxy is vetted too before it is dialled
 * (a stranger typed it in); the operator's proxies (a pool's, HOOKRELAY_EGRESS_PROXY) are
 * dialled as configured, private addresses included.
 *
 * Which proxy: the endpoint's own, else its pool (the endpoint's, else its application's),
 * else HOOKRELAY_EGRESS_PROXY, else none.
 */
import type { ConnectionOptions } from "node:tls";
import { type Agent, buildConnector, type Dispatcher } from "undici";
import type { EgressConfig } from "../../config.ts";
import {
  type GuardedAgentOptions,
  makeGuardedAgent,
  type SsrfGuard,
} from "../../security/ssrf-guard.ts";
import {
  makeTunnelConnector,
  ProxyError,
  type ProxyTarget,
  parseProxyUrl,
} from "./proxy-tunnel.ts";
import { keepingTlsAlerts } from "./tls-failure.ts";

/** An attempt's egress settings, opened (delivery/http/egress-route.ts builds them). */
export interface EgressRoute {
  /** equal keys, equal settings: the dispatcher cache's key */
  key: string;
  /** the endpoint's own proxy URL, credentials included */
  proxyUrl: string | null;
  /** the egress pool (the endpoint's, else its application's) */
  pool: string | null;
  /** TLS to the receiver: client certificate and key (PEM), CA bundle (PEM) */
  tls: { cert: string | null; key: string | null; ca: string | null } | null;
}

export interface EgressDispatchers {
  /** The dispatcher of a route (none: the shared one), or why it has none. */
  dispatcherFor(route: EgressRoute | undefined): Dispatcher | { refused: Error };
  close(): Promise<void>;
}

/** Most Agents kept besides the shared one; the oldest is closed past it. */
export const MAX_EGRESS_AGENTS = 1_000;

export function makeEgressDispatchers(options: {
  guard: Pick<SsrfGuard, "vetHost">;
  egress: EgressConfig;
  /** the sender's Agent options (connections, keep-alive, timeouts) */
  agentOptions: Omit<GuardedAgentOptions, "connect">;
  /** ms to connect (and get a proxy's answer); default 10_000 */
  connectTimeoutMs?: number;
}): EgressDispatchers {
  const { guard, egress, agentOptions } = options;
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  const agents = new Map<string, Agent>();
  const proxies = new Map<string, ProxyTarget | Error>();

  /** A proxy URL parsed once; an Error when it does not parse. */
  const proxyOf = (url: string): ProxyTarget | Error => {
    let proxy = proxies.get(url);
    if (proxy === undefined) {
      try {
        proxy = parseProxyUrl(url);
      } catch (err) {
        proxy = new ProxyError(`the proxy URL ${(err as Error).message}`);
      }
      if (proxies.size > MAX_EGRESS_AGENTS) proxies.clear();
      proxies.set(url, proxy);
    }
    return proxy;
  };

  const vettedAddress = async (host: string): Promise<string> => {
    const vetted = await guard.vetHost(host);
    return vetted.kind === "allowlisted-name" ? host : vetted.addresses[0]!;
  };

  function build(
    proxy: ProxyTarget | null,
    vetProxy: boolean,
    localAddress: string | null,
    tls: ConnectionOptions,
  ): Agent {
    if (proxy === null) {
      // direct: undici's own connector, given the TLS options (as the shared Agent, if none)
      return makeGuardedAgent(guard, {
        ...agentOptions,
        ...(localAddress && { localAddress }),
        ...(Object.keys(tls).length > 0 && {
          connect: keepingTlsAlerts(
            buildConnector({ timeout: timeoutMs, ...tls } as buildConnector.BuildOptions),
          ),
        }),
      });
    }
    const connect = keepingTlsAlerts(
      makeTunnelConnector({
        proxy,
        ...(vetProxy && { proxyAddress: vettedAddress }),
        ...(localAddress && { localAddress }),
        tls,
        timeoutMs,
      }),
    );
    return makeGuardedAgent(guard, { ...agentOptions, connect });
  }

  const configured = egress.proxy === null ? null : proxyOf(egress.proxy);
  if (configured instanceof Error) throw configured;
  const defaultProxy: ProxyTarget | null = configured;
  const shared = build(defaultProxy, false, null, {});

  function dispatcherFor(route: EgressRoute | undefined): Dispatcher | { refused: Error } {
    if (route === undefined) return shared;
    const existing = agents.get(route.key);
    if (existing) return existing;
    let proxy: ProxyTarget | null = defaultProxy;
    let vetProxy = false;
    let localAddress: string | null = null;
    if (route.proxyUrl !== null) {
      const own = proxyOf(route.proxyUrl);
      if (own instanceof Error) return { refused: own };
      proxy = own;
      vetProxy = true;
    } else if (route.pool !== null) {
      const pool = egress.pools[route.pool];
      if (pool === undefined)
        return {
          refused: new ProxyError(`egress pool ${route.pool} is not configured on this worker`),
        };
      const pooled = pool.proxy === null ? null : proxyOf(pool.proxy);
      if (pooled instanceof Error) return { refused: pooled };
      proxy = pooled;
      localAddress = pool.localAddress;
    }
    const tls: ConnectionOptions = {};
    if (route.tls?.cert) tls.cert = route.tls.cert;
    if (route.tls?.key) tls.key = route.tls.key;
    if (route.tls?.ca) tls.ca = route.tls.ca;
    const agent = build(proxy, vetProxy, localAddress, tls);
    if (agents.size >= MAX_EGRESS_AGENTS) {
      const [oldestKey, oldest] = agents.entries().next().value!;
      agents.delete(oldestKey);
      // (requests still running on it finish first)
      oldest.close().catch(() => {});
    }
    agents.set(route.key, agent);
    return agent;
  }

  return {
    dispatcherFor,
    async close() {
      const all = [shared, ...agents.values()];
      agents.clear();
      await Promise.all(all.map((a) => a.close()));
    },
  };
}
