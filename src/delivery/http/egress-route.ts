/**
 * An endpoint's egress settings as the HTTP sender takes them (docs/egress.md): the proxy
 * URL with its sealed password, the client certificate and key opened, the pool and CA bundle as they are, and a
 * key that names the combination (the sender keeps one dispatcher per key). Worked out once
 * per distinct set of stored values, not per request.
 */
import type { SecretBox } from "../../security/secret-box.ts";
import type { EgressRoute } from "../egress/egress-dispatchers.ts";
import type { EndpointEgress } from "../transport.ts";

/** A route cache dropped whole past this many entries (endpoints re-saved leave old ones). */
const MAX_ROUTES = 10_000;

export interface EgressRoutes {
  /** The route of stored settings; throws when a sealed value cannot be opened. */
  routeOf(egress: EndpointEgress): EgressRoute;
}

export function makeEgressRoutes(box: SecretBox): EgressRoutes {
  const routes = new Map<string, EgressRoute>();
  const open = (sealed: string | null) => (sealed === null ? null : box.open(sealed));
  return {
    routeOf(egress) {
      // (sealed values differ whenever the plain ones do: the key names the settings)
      const key = [
        egress.pool ?? "",
        egress.proxyUrl ?? "",
        egress.proxySecret ?? "",
        egress.tlsClientCert ?? "",
        egress.tlsClientKey ?? "",
        egress.tlsCa ?? "",
      ].join("\u0000");
      let route = routes.get(key);
      if (route === undefined) {
        const cert = open(egress.tlsClientCert);
        const tlsKey = open(egress.tlsClientKey);
        route = {
          key,
          pool: egress.pool,
          proxyUrl: withPassword(egress.proxyUrl, open(egress.proxySecret)),
          tls:
            cert === null && egress.tlsCa === null ? null : { cert, key: tlsKey, ca: egress.tlsCa },
        };
        if (routes.size > MAX_ROUTES) routes.clear();
        routes.set(key, route);
      }
      return route;
    },
  };
}

/** The proxy URL with its password put back; null: no proxy of the endpoint's own. */
function withPassword(url: string | null, password: string | null): string | null {
  if (url === null || password === null) return url;
  const parsed = new URL(url);
  parsed.password = encodeURIComponent(password);
  return parsed.toString();
}
