/**
 * The connect-time half of the SSRF guard: an undici connector (the `connect` option of
 * Agent/Client) that vets the host at the moment of dialling and dials only checked addresses.
 *
 * undici hands a connector `{ hostname, host, protocol, port, servername }` for each new
 * socket. We resolve `hostname` ourselves, refuse it if ANY address is blocked, and call the
 * default connector with `hostname` replaced by a checked IP: it dials the IP directly (no
 * second lookup that a rebinding DNS server could answer differently), while `servername`
 * keeps the original name for TLS SNI and certificate checks. IP literals are vetted too
 * (undici's own `connect.lookup` is never called for them).
 */
import { Agent, buildConnector } from "undici";
import type { SsrfGuard, VettedHost } from "./ssrf-guard.ts";

/** At most this many checked addresses are tried per socket, in resolver order. */
export const MAX_ADDRESSES_TRIED = 4;

/** Connect failures after which the next checked address is worth a try. */
const NEXT_ADDRESS_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "ETIMEDOUT",
  "UND_ERR_CONNECT_TIMEOUT",
]);

type CallbackArgs = Parameters<buildConnector.Callback>;

/**
 * Wraps `inner` (default: undici's own connector) so every socket is vetted by `guard`. A
 * refused host fails the connection with the guard's SsrfBlockedError (code
 * url_not_allowed); resolver errors keep their codes (ENOTFOUND, EAI_AGAIN).
 */
export function makeGuardedConnector(
  guard: Pick<SsrfGuard, "vetHost">,
  inner: buildConnector.connector = buildConnector({}),
): buildConnector.connector {
  return (options, callback) => {
    let done = false;
    const finish = (...args: CallbackArgs) => {
      if (done) return;
      done = true;
      callback(...args);
    };
    const fail = (err: unknown) =>
      finish(err instanceof Error ? err : new Error(String(err)), null);

    const dial = (vetted: VettedHost) => {
      if (vetted.kind === "allowlisted-name") {
        inner(options, finish);
        return;
      }
      // undici sets servername for https (or '' for IP hosts); keep SNI on the original name.
      const servername = options.servername || (vetted.literal ? undefined : options.hostname);
      const addresses = vetted.addresses.slice(0, MAX_ADDRESSES_TRIED);
      const attempt = (i: number) => {
        inner({ ...options, hostname: addresses[i]!, servername }, (...args: CallbackArgs) => {
          const [err] = args;
          if (err && i + 1 < addresses.length && NEXT_ADDRESS_CODES.has(errorCode(err))) {
            attempt(i + 1);
            return;
          }
          finish(...args);
        });
      };
      attempt(0);
    };

    guard.vetHost(options.hostname).then((vetted) => {
      try {
        dial(vetted);
      } catch (err) {
        fail(err);
      }
    }, fail);
  };
}

function errorCode(err: Error): string {
  const code = (err as { code?: unknown }).code;
  return typeof code === "string" ? code : "";
}

/**
 * Agent options for makeGuardedAgent. `factory` and `socketPath` are left out: either would
 * route sockets around the guarded connector.
 */
export type GuardedAgentOptions = Omit<Agent.Options, "connect" | "factory" | "socketPath"> & {
  /** Options for undici's default connector (TLS, timeout), or a connector to wrap. */
  connect?: Partial<buildConnector.BuildOptions> | buildConnector.connector;
};

/** An undici Agent whose every socket goes through the guard (pass it to makeHttpSender). */
export function makeGuardedAgent(
  guard: Pick<SsrfGuard, "vetHost">,
  options: GuardedAgentOptions = {},
): Agent {
  const { connect, ...agentOptions } = options;
  // With a function `connect`, undici ignores connectTimeout/maxCachedSessions/allowH2, so
  // they are handed to the default connector here, as undici itself would.
  const inner =
    typeof connect === "function"
      ? connect
      : buildConnector({
          ...(agentOptions.connectTimeout != null && { timeout: agentOptions.connectTimeout }),
          ...(agentOptions.maxCachedSessions != null && {
            maxCachedSessions: agentOptions.maxCachedSessions,
          }),
          ...(agentOptions.allowH2 != null && { allowH2: agentOptions.allowH2 }),
          ...connect,
        } as buildConnector.BuildOptions);
  return new Agent({ ...agentOptions, connect: makeGuardedConnector(guard, inner) });
}
