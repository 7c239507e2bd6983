/**
 * Where webhooks may never go, as data (docs/security.md, SSRF guard): the special-purpose ranges of the IANA
 * IPv4/IPv6 registries that are not globally reachable, plus the IPv6 forms that carry an
 * IPv4 address inside them. `blockedReason` is the one function that applies the tables:
 *
 *   1. an address in a BLOCKED_RANGES row is refused (the most specific row names it);
 *   2. an IPv6 address in an IPV4_EMBEDDINGS form is judged by the IPv4 inside it, so
 *      ::ffff:127.0.0.1, 64:ff9b::7f00:1, 2002:7f00:1:: and their kin are loopback;
 *   3. any other IPv6 address outside global unicast 2000::/3 is refused (unassigned or
 *      reserved space; nothing legitimate lives there).
 */
import {
  type Cidr,
  cidrContains,
  formatIp,
  type IpBytes,
  parseCidr,
  parseHostAddress,
} from "./ip-address.ts";

export interface BlockedRange {
  readonly cidr: string;
  readonly reason: string;
}

export const BLOCKED_RANGES: readonly BlockedRange[] = [
  // IPv4
  { cidr: "0.0.0.0/8", reason: "unspecified, 'this network'" },
  { cidr: "10.0.0.0/8", reason: "RFC 1918 private network" },
  { cidr: "100.64.0.0/10", reason: "RFC 6598 carrier-grade NAT" },
  { cidr: "127.0.0.0/8", reason: "loopback" },
  { cidr: "169.254.0.0/16", reason: "link-local" },
  { cidr: "169.254.169.254/32", reason: "cloud metadata service" },
  { cidr: "172.16.0.0/12", reason: "RFC 1918 private network" },
  { cidr: "192.0.0.0/24", reason: "IETF protocol assignments" },
  { cidr: "192.0.2.0/24", reason: "documentation, TEST-NET-1" },
  { cidr: "192.168.0.0/16", reason: "RFC 1918 private network" },
  { cidr: "198.18.0.0/15", reason: "benchmarking" },
  { cidr: "198.51.100.0/24", reason: "documentation, TEST-NET-2" },
  { cidr: "203.0.113.0/24", reason: "documentation, TEST-NET-3" },
  { cidr: "224.0.0.0/4", reason: "multicast" },
  { cidr: "240.0.0.0/4", reason: "reserved" },
  { cidr: "255.255.255.255/32", reason: "broadcast" },
  // IPv6
  { cidr: "::/128", reason: "unspecified" },
  { cidr: "::1/128", reason: "loopback" },
  // Local-use NAT64 (RFC 8215) may embed the IPv4 address at several offsets depending on the
  // operator's prefix length, so it cannot be decoded reliably; it is never global anyway.
  { cidr: "64:ff9b:1::/48", reason: "local-use NAT64" },
  { cidr: "100::/64", reason: "discard-only" },
  { cidr: "2001:2::/48", reason: "benchmarking" },
  { cidr: "2001:db8::/32", reason: "documentation" },
  { cidr: "3fff::/20", reason: "documentation" },
  { cidr: "fc00::/7", reason: "unique-local, private" },
  { cidr: "fe80::/10", reason: "link-local" },
  { cidr: "fec0::/10", reason: "deprecated site-local" },
  { cidr: "ff00::/8", reason: "multicast" },
];

/** An IPv6 form that carries IPv4 addresses; each is checked as if dialled directly. */
export interface Ipv4Embedding {
  readonly cidr: string;
  readonly form: string;
  /** The embedded IPv4 address(es), 4 bytes each, from the 16-byte IPv6 address. */
  readonly embedded: (v6: IpBytes) => IpBytes[];
}

const last32 = (v6: IpBytes) => [v6.slice(12, 16)];

export const IPV4_EMBEDDINGS: readonly Ipv4Embedding[] = [
  { cidr: "::ffff:0:0/96", form: "IPv4-mapped", embedded: last32 },
  // Deprecated IPv4-compatible form; ::/128 and ::1/128 above are judged first.
  { cidr: "::/96", form: "IPv4-compatible", embedded: last32 },
  { cidr: "64:ff9b::/96", form: "NAT64", embedded: last32 },
  { cidr: "2002::/16", form: "6to4", embedded: (v6) => [v6.slice(2, 6)] },
  // Teredo (RFC 4380): bits 32-63 are the server, the last 32 bits the client XOR 0xffffffff.
  {
    cidr: "2001::/32",
    form: "Teredo",
    embedded: (v6) => [v6.slice(4, 8), v6.slice(12, 16).map((b) => b ^ 0xff)],
  },
];

/** IPv6 global unicast; every address outside it (and not decoded above) is refused. */
export const IPV6_GLOBAL_UNICAST = "2000::/3";

function compile(text: string): Cidr {
  const cidr = parseCidr(text);
  if (!cidr) throw new Error(`bad CIDR in the SSRF tables: ${text}`);
  return cidr;
}

// Longest prefix first, so the first match is the most specific row.
const blocked = BLOCKED_RANGES.map((row) => ({ ...row, range: compile(row.cidr) })).sort(
  (a, b) => b.range.prefix - a.range.prefix,
);
const embeddings = IPV4_EMBEDDINGS.map((row) => ({ ...row, range: compile(row.cidr) }));
const globalUnicast = compile(IPV6_GLOBAL_UNICAST);

/** Why an address (4 or 16 bytes) must not be dialled, or null when it is public. */
export function blockedReason(address: IpBytes): string | null {
  const row = blocked.find((r) => cidrContains(r.range, address));
  if (row) return `${row.reason} (${row.cidr})`;
  if (address.length === 4) return null;
  for (const e of embeddings) {
    if (!cidrContains(e.range, address)) continue;
    for (const v4 of e.embedded(address)) {
      const inner = blockedReason(v4);
      if (inner) return `${e.form} address of ${formatIp(v4)}, ${inner}`;
    }
    return null;
  }
  if (!cidrContains(globalUnicast, address)) {
    return `outside IPv6 global unicast (${IPV6_GLOBAL_UNICAST})`;
  }
  return null;
}

/**
 * The reason `ip` is blocked, or null when it is a public address. Accepts every notation
 * parseHostAddress does; a string that is not an IP address is refused (fails closed).
 */
export function isBlockedAddress(ip: string): string | null {
  const parsed = parseHostAddress(ip);
  if (!parsed) return "not an IP address";
  return blockedReason(parsed.bytes);
}
