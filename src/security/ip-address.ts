/**
 * IP addresses as bytes (4 for IPv4, 16 for IPv6): parsing every notation a URL parser or
 * inet_aton(3) accepts, canonical formatting, and CIDR prefixes. Pure functions, no I/O.
 */

/** An IP address in network byte order: 4 bytes (IPv4) or 16 bytes (IPv6). */
export type IpBytes = Uint8Array;

/** An IP literal found in a hostname, in canonical text form. */
export interface HostAddress {
  family: 4 | 6;
  /** Canonical text: dotted quad, or RFC 5952 IPv6 without brackets or zone id. */
  address: string;
  bytes: IpBytes;
}

/** A parsed CIDR prefix; host bits of `bytes` are zeroed. */
export interface Cidr {
  text: string;
  bytes: IpBytes;
  prefix: number;
}

/**
 * Recognises an IP literal in any notation that the WHATWG URL parser or inet_aton would turn
 * into an address, or returns null for a name. Accepts brackets and IPv6 zone ids
 * (`%eth0`, `%25eth0`; the zone is dropped), and for IPv4 the inet_aton forms: decimal
 * (2130706433), octal (0177.0.0.1), hex (0x7f000001), short forms (127.1, 127.0.1), a
 * trailing dot. `new URL()` already normalises these; this is defence in depth for raw input.
 */
export function parseHostAddress(hostname: string): HostAddress | null {
  let host = hostname.toLowerCase();
  const bracketed = host.startsWith("[");
  if (bracketed) {
    if (!host.endsWith("]")) return null;
    host = host.slice(1, -1);
  }
  if (bracketed || host.includes(":")) {
    const zone = host.indexOf("%");
    const bytes = parseIPv6(zone === -1 ? host : host.slice(0, zone));
    return bytes && { family: 6, address: formatIp(bytes), bytes };
  }
  const bytes = parseIPv4Lenient(host);
  return bytes && { family: 4, address: formatIp(bytes), bytes };
}

/**
 * True when the last dot-separated label of a name is numeric (decimal or 0x-hex), which the
 * URL parser treats as an IPv4 address or a failure, never as a domain. A raw host that ends
 * in a number but did not parse as IPv4 (1.2.3.09, 256.1.1.1) is ambiguous and should be
 * refused rather than resolved.
 */
export function endsInNumber(hostname: string): boolean {
  const labels = hostname.toLowerCase().split(".");
  if (labels.length > 1 && labels.at(-1) === "") labels.pop();
  const last = labels.at(-1) ?? "";
  return /^[0-9]+$/.test(last) || /^0x[0-9a-f]*$/.test(last);
}

/**
 * IPv4 the way WHATWG URL's IPv4 parser (and inet_aton) reads it: 1 to 4 parts, each decimal,
 * 0-prefixed octal or 0x-prefixed hex; the last part fills the remaining bytes.
 */
function parseIPv4Lenient(text: string): IpBytes | null {
  const parts = text.split(".");
  if (parts.length > 1 && parts.at(-1) === "") parts.pop(); // one trailing dot is allowed
  if (parts.length === 0 || parts.length > 4) return null;
  const numbers: number[] = [];
  for (const part of parts) {
    const n = parseIPv4Number(part);
    if (n === null) return null;
    numbers.push(n);
  }
  const last = numbers.pop() ?? 0;
  if (numbers.some((n) => n > 255)) return null;
  // The last part covers the bytes the earlier parts left: 127.1 is 127.0.0.1.
  if (last >= 256 ** (4 - numbers.length)) return null;
  let value = last;
  numbers.forEach((n, i) => {
    value += n * 256 ** (3 - i);
  });
  return Uint8Array.of(value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff);
}

/** One IPv4 part. Numbers are compared against at most 2^32, so float precision suffices. */
function parseIPv4Number(part: string): number | null {
  if (/^0x[0-9a-f]*$/.test(part)) return part.length === 2 ? 0 : Number.parseInt(part.slice(2), 16);
  if (/^0[0-7]+$/.test(part)) return Number.parseInt(part.slice(1), 8);
  if (/^(0|[1-9][0-9]*)$/.test(part)) return Number.parseInt(part, 10);
  return null; // includes 08/09 (invalid octal), empty parts and names
}

/** A strict dotted quad (no leading zeros), as used inside IPv6 and in CIDR text. */
function parseIPv4Strict(text: string): IpBytes | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const bytes = new Uint8Array(4);
  for (const [i, part] of parts.entries()) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return null;
    const n = Number(part);
    if (n > 255) return null;
    bytes[i] = n;
  }
  return bytes;
}

/** RFC 4291 §2.2 text: hex groups, at most one `::`, optionally a dotted quad at the end. */
function parseIPv6(text: string): IpBytes | null {
  let hex = text;
  let tail: IpBytes | null = null;
  const lastColon = hex.lastIndexOf(":");
  if (lastColon === -1) return null;
  if (hex.slice(lastColon + 1).includes(".")) {
    tail = parseIPv4Strict(hex.slice(lastColon + 1));
    if (!tail) return null;
    hex = `${hex.slice(0, lastColon + 1)}0:0`; // parse as two groups, filled in below
  }
  const halves = hex.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (s: string | undefined) => (s ? s.split(":") : []);
  const head = groupsOf(halves[0]);
  const rest = groupsOf(halves[1]);
  const total = head.length + rest.length;
  if (halves.length === 1 ? total !== 8 : total > 7) return null;
  const groups = [...head, ...Array<string>(8 - total).fill("0"), ...rest];
  const bytes = new Uint8Array(16);
  for (const [i, group] of groups.entries()) {
    if (!/^[0-9a-f]{1,4}$/.test(group)) return null;
    const n = Number.parseInt(group, 16);
    bytes[2 * i] = n >> 8;
    bytes[2 * i + 1] = n & 0xff;
  }
  if (tail) bytes.set(tail, 12);
  return bytes;
}

/** Canonical text: dotted quad, or RFC 5952 IPv6 (lowercase, longest zero run as `::`). */
export function formatIp(bytes: IpBytes): string {
  if (bytes.length === 4) return bytes.join(".");
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0));
  let bestStart = -1;
  let bestLength = 1; // RFC 5952 §4.2.2: a single zero group is not compressed
  for (let i = 0; i < 8; ) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(":");
  const left = hex.slice(0, bestStart).join(":");
  const right = hex.slice(bestStart + bestLength).join(":");
  return `${left}::${right}`;
}

/**
 * Parses `address/prefix` (or a bare address, a single-host prefix). The address must be a
 * dotted quad or IPv6 text: lenient IPv4 forms are refused here because `10.1/16` would read
 * as 10.0.0.1, not the 10.1.0.0/16 its author meant. Host bits are cleared.
 */
export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf("/");
  const addressText = (slash === -1 ? text : text.slice(0, slash)).toLowerCase();
  const bytes = addressText.includes(":") ? parseIPv6(addressText) : parseIPv4Strict(addressText);
  if (!bytes) return null;
  const bits = bytes.length * 8;
  let prefix = bits;
  if (slash !== -1) {
    const prefixText = text.slice(slash + 1);
    if (!/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return null;
    prefix = Number(prefixText);
    if (prefix > bits) return null;
  }
  for (let bit = prefix; bit < bits; bit++) {
    const i = bit >> 3;
    bytes[i] = (bytes[i] ?? 0) & ~(0x80 >> (bit & 7));
  }
  return { text: `${formatIp(bytes)}/${prefix}`, bytes, prefix };
}

/** True when `address` lies inside `cidr` (an IPv4 address never matches an IPv6 prefix). */
export function cidrContains(cidr: Cidr, address: IpBytes): boolean {
  if (cidr.bytes.length !== address.length) return false;
  const whole = cidr.prefix >> 3;
  for (let i = 0; i < whole; i++) if (cidr.bytes[i] !== address[i]) return false;
  const rest = cidr.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return ((cidr.bytes[whole] ?? 0) & mask) === ((address[whole] ?? 0) & mask);
}
