/**
 * The SSRF guard (docs/security.md): endpoint URLs are typed in by strangers, so hookrelay refuses to
 * deliver to loopback, private, link-local, metadata and other non-public addresses. It checks
 * twice:
 *
 *   - save time, `checkUrl`: scheme, IP literals, and every address the name resolves to now;
 *   - connect time, `connector`: undici's connect hook resolves the name itself, checks every
 *     address and dials one of the checked addresses, so a name that re-resolves to
 *     127.0.0.1 after it was saved (DNS rebinding) is still refused. This check is the
 *     authoritative one.
 *
 * The allow-list (HOOKRELAY_SSRF_ALLOWLIST) lets self-hosted receivers and tests through:
 * CIDRs (an address inside one passes) and host names (exact, case-insensitive; the name
 * passes whatever it resolves to).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { buildConnector } from "undici";
import { ConfigError, HookRelayError } from "../errors.ts";
import { makeGuardedConnector } from "./guarded-connector.ts";
import {
  type Cidr,
  cidrContains,
  endsInNumber,
  type IpBytes,
  parseCidr,
  parseHostAddress,
} from "./ip-address.ts";
import { blockedReason } from "./ip-ranges.ts";

export { type GuardedAgentOptions, makeGuardedAgent } from "./guarded-connector.ts";
export { parseHostAddress } from "./ip-address.ts";

export const SSRF_BLOCKED_CODE = "url_not_allowed";

/** A URL, name or address hookrelay refuses to deliver to. Never retry it. */
export class SsrfBlockedError extends HookRelayError {
  /** The host or address that was refused (never the full URL: its path may carry secrets). */
  readonly target: string;
  readonly reason: string;
  constructor(target: string, reason: string, options?: { cause?: unknown }) {
    super(SSRF_BLOCKED_CODE, `refusing to deliver to ${target}: ${reason}`, options);
    this.target = target;
    this.reason = reason;
  }
}

/** True for an SsrfBlockedError, or an error with its code, anywhere in a `cause` chain. */
export function isSsrfBlockedError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; depth++) {
    if (e instanceof SsrfBlockedError) return true;
    if (typeof e !== "object") return false;
    const { code, cause } = e as { code?: unknown; cause?: unknown };
    if (code === SSRF_BLOCKED_CODE) return true;
    e = cause;
  }
  return false;
}

/** Resolves a host name to all of its addresses (IP text). */
export type HostLookup = (hostname: string) => Promise<readonly string[]>;

export interface SsrfGuardOptions {
  /** allowlist: CIDRs (`10.0.0.0/8`, `::1/128`, a bare address) or exact host names. */
  allowlist: readonly string[];
  /** lookup: name resolution for both checks. Default dns.lookup({ all: true }). */
  lookup?: HostLookup;
  /**
   * lookupTimeoutMs: how long checkUrl waits for DNS, default 5_000. A name that does not
   * resolve in time, or at all, is accepted at save time: the connect-time check decides.
   */
  lookupTimeoutMs?: number;
}

/** What a host vetted for dialling turned out to be. */
export type VettedHost =
  /** On the allow-list by name: dial it as is. */
  | { kind: "allowlisted-name" }
  /** Checked addresses (canonical text), in resolver order; `literal` if the host was an IP. */
  | { kind: "addresses"; addresses: string[]; literal: boolean };

export interface SsrfGuard {
  /** Save-time check of an endpoint URL; throws SsrfBlockedError when it is refused. */
  checkUrl(url: string | URL): Promise<void>;
  /**
   * Connect-time check of a host name or IP literal (brackets allowed): resolves and checks
   * it, throwing SsrfBlockedError, or the resolver's error (code ENOTFOUND, ...).
   */
  vetHost(hostname: string): Promise<VettedHost>;
  /** Why `ip` may not be dialled under this allow-list, or null when it may. */
  addressRefusal(ip: string): string | null;
  /** An undici connector (Agent `connect` option) that vets every socket; see makeGuardedAgent. */
  connector: buildConnector.connector;
}

export const DEFAULT_LOOKUP_TIMEOUT_MS = 5_000;

const systemLookup: HostLookup = async (hostname) =>
  (await dnsLookup(hostname, { all: true })).map((a) => a.address);

/** Builds a guard for one allow-list; throws ConfigError for an entry it cannot read. */
export function makeSsrfGuard(options: SsrfGuardOptions): SsrfGuard {
  const lookup = options.lookup ?? systemLookup;
  const lookupTimeoutMs = options.lookupTimeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS;
  const { cidrs, names } = compileAllowlist(options.allowlist);

  function addressAllowed(bytes: IpBytes): boolean {
    // An IPv4-mapped address dials the IPv4 address itself, so an IPv4 entry covers it too.
    const mapped = isV4Mapped(bytes) ? bytes.slice(12, 16) : null;
    return cidrs.some(
      (c) => cidrContains(c, bytes) || (mapped !== null && cidrContains(c, mapped)),
    );
  }

  function refusal(bytes: IpBytes): string | null {
    return addressAllowed(bytes) ? null : blockedReason(bytes);
  }

  function addressRefusal(ip: string): string | null {
    const parsed = parseHostAddress(ip);
    return parsed ? refusal(parsed.bytes) : "not an IP address";
  }

  /** Refuses by name, before any lookup; true when the name is allow-listed. */
  function vetName(host: string): boolean {
    const name = normaliseName(host);
    if (names.has(name)) return true;
    if (name === "") throw new SsrfBlockedError("(empty host)", "no host name");
    if (name === "localhost" || name.endsWith(".localhost")) {
      throw new SsrfBlockedError(host, "'localhost' names always mean this machine");
    }
    if (endsInNumber(name)) {
      throw new SsrfBlockedError(host, "a host ending in a number must be a valid IPv4 address");
    }
    return false;
  }

  function checkResolved(host: string, resolved: readonly string[]): string[] {
    if (resolved.length === 0) {
      throw Object.assign(new Error(`${host} has no addresses`), { code: "ENOTFOUND" });
    }
    return resolved.map((ip) => {
      const parsed = parseHostAddress(ip);
      const reason = parsed
        ? refusal(parsed.bytes)
        : "the resolver answered something that is not an IP address";
      if (reason) throw new SsrfBlockedError(host, `it resolves to ${ip}, ${reason}`);
      return parsed!.address;
    });
  }

  async function vetHost(hostname: string): Promise<VettedHost> {
    const ip = parseHostAddress(hostname);
    if (ip) {
      const reason = refusal(ip.bytes);
      if (reason) throw new SsrfBlockedError(ip.address, reason);
      return { kind: "addresses", addresses: [ip.address], literal: true };
    }
    if (vetName(hostname)) return { kind: "allowlisted-name" };
    return {
      kind: "addresses",
      addresses: checkResolved(hostname, await lookup(hostname)),
      literal: false,
    };
  }

  async function checkUrl(input: string | URL): Promise<void> {
    let url: URL;
    try {
      url = typeof input === "string" ? new URL(input) : input;
    } catch (cause) {
      throw new SsrfBlockedError("URL", "not a valid absolute URL", { cause });
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      throw new SsrfBlockedError(`${url.protocol} URL`, "only http and https are delivered to");
    }
    // Always the parsed hostname: the URL parser has already turned 0x7f.1, 2130706433,
    // 0177.0.0.1 and friends into 127.0.0.1, exactly as undici will dial it.
    const host = url.hostname;
    if (parseHostAddress(host)) {
      await vetHost(host);
      return;
    }
    if (vetName(host)) return;
    let resolved: readonly string[];
    try {
      resolved = await withTimeout(lookup(host), lookupTimeoutMs);
    } catch {
      // Deliberately accepted: a receiver may be saved before its DNS exists, and the
      // connect-time check refuses it later if it then points somewhere private.
      return;
    }
    if (resolved.length > 0) checkResolved(host, resolved);
  }

  return { checkUrl, vetHost, addressRefusal, connector: makeGuardedConnector({ vetHost }) };
}

function compileAllowlist(entries: readonly string[]): { cidrs: Cidr[]; names: Set<string> } {
  const cidrs: Cidr[] = [];
  const names = new Set<string>();
  for (const raw of entries) {
    const entry = raw.trim();
    if (entry === "") continue;
    const cidr = parseCidr(entry);
    if (cidr) {
      cidrs.push(cidr);
    } else if (entry.includes("/") || entry.includes(":") || parseHostAddress(entry)) {
      throw new ConfigError(`SSRF allow-list entry ${JSON.stringify(entry)} is not a valid CIDR`);
    } else if (/^[a-z0-9_.-]+$/i.test(entry)) {
      names.add(normaliseName(entry));
    } else {
      throw new ConfigError(
        `SSRF allow-list entry ${JSON.stringify(entry)} is neither a CIDR nor a host name`,
      );
    }
  }
  return { cidrs, names };
}

/** Lowercase, without the root dot: `Example.COM.` and `example.com` are one name. */
function normaliseName(host: string): string {
  const name = host.toLowerCase();
  return name.endsWith(".") ? name.slice(0, -1) : name;
}

function isV4Mapped(bytes: IpBytes): boolean {
  if (bytes.length !== 16) return false;
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`DNS lookup took longer than ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
