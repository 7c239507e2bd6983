import { describe, expect, test } from "vitest";
import { formatIp, parseCidr, parseHostAddress } from "./ip-address.ts";
import { BLOCKED_RANGES, blockedReason, IPV4_EMBEDDINGS, isBlockedAddress } from "./ip-ranges.ts";

/** Deterministic PRNG (mulberry32) so a failing fuzz case can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** First, last, midpoint and a few random addresses of a CIDR. */
function sampleRange(cidrText: string, random: () => number): string[] {
  const cidr = parseCidr(cidrText)!;
  const bits = cidr.bytes.length * 8;
  const withHostBits = (pick: (bit: number) => boolean) => {
    const bytes = cidr.bytes.slice();
    for (let bit = cidr.prefix; bit < bits; bit++) {
      if (pick(bit)) bytes[bit >> 3]! |= 0x80 >> (bit & 7);
    }
    return formatIp(bytes);
  };
  return [
    withHostBits(() => false),
    withHostBits(() => true),
    withHostBits((bit) => bit === cidr.prefix),
    withHostBits(() => random() < 0.5),
    withHostBits(() => random() < 0.5),
  ];
}

describe("blocked ranges", () => {
  test("every row is a valid CIDR written in canonical form", () => {
    for (const row of [...BLOCKED_RANGES, ...IPV4_EMBEDDINGS]) {
      expect(parseCidr(row.cidr)?.text, row.cidr).toBe(row.cidr);
    }
  });

  test("first, last, middle and random addresses of every blocked range are refused", () => {
    const random = prng(1);
    for (const row of BLOCKED_RANGES) {
      for (const address of sampleRange(row.cidr, random)) {
        expect(isBlockedAddress(address), `${address} in ${row.cidr}`).not.toBeNull();
      }
    }
  });

  test.each([
    ["0.0.0.0", "unspecified"],
    ["0.255.255.255", "unspecified"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.255", "loopback"],
    ["10.0.0.0", "RFC 1918"],
    ["10.255.255.255", "RFC 1918"],
    ["172.16.0.0", "RFC 1918"],
    ["172.31.255.255", "RFC 1918"],
    ["192.168.0.0", "RFC 1918"],
    ["192.168.255.255", "RFC 1918"],
    ["100.64.0.0", "carrier-grade NAT"],
    ["100.127.255.255", "carrier-grade NAT"],
    ["169.254.0.0", "link-local"],
    ["169.254.255.255", "link-local"],
    ["169.254.169.254", "metadata"],
    ["192.0.0.0", "IETF"],
    ["192.0.0.255", "IETF"],
    ["192.0.2.0", "documentation"],
    ["198.51.100.255", "documentation"],
    ["203.0.113.7", "documentation"],
    ["198.18.0.0", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["224.0.0.0", "multicast"],
    ["239.255.255.255", "multicast"],
    ["240.0.0.0", "reserved"],
    ["255.255.255.254", "reserved"],
    ["255.255.255.255", "broadcast"],
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fc00::", "unique-local"],
    ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "unique-local"],
    ["fd00:ec2::254", "unique-local"], // AWS IPv6 metadata
    ["fe80::", "link-local"],
    ["febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"],
    ["fec0::", "site-local"],
    ["feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "site-local"],
    ["ff00::", "multicast"],
    ["ff02::1", "multicast"],
    ["2001:db8::", "documentation"],
    ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"],
    ["100::", "discard"],
    ["100::ffff:ffff:ffff:ffff", "discard"],
    ["64:ff9b:1::", "local-use NAT64"],
    ["64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "local-use NAT64"],
    ["4000::1", "global unicast"],
    ["1::", "global unicast"],
    ["fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "global unicast"], // just below fc00::/7
  ])("%s is refused as %s", (address, reason) => {
    expect(isBlockedAddress(address)).toContain(reason);
  });

  test.each([
    "8.8.8.8",
    "1.1.1.1",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "192.0.1.0",
    "192.0.3.0",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
    "2001:db9::",
    "2001:1::1", // just past Teredo's /32
    "3fff:ffff::", // not in 3fff::/20 documentation
  ])("%s is public", (address) => {
    expect(isBlockedAddress(address)).toBeNull();
  });
});

describe("IPv6 forms that carry an IPv4 address", () => {
  test.each([
    ["::ffff:127.0.0.1", "IPv4-mapped address of 127.0.0.1, loopback"],
    ["::ffff:7f00:1", "IPv4-mapped address of 127.0.0.1, loopback"],
    ["::FFFF:A9FE:A9FE", "IPv4-mapped address of 169.254.169.254, cloud metadata"],
    ["0:0:0:0:0:ffff:10.1.2.3", "IPv4-mapped address of 10.1.2.3, RFC 1918"],
    ["::127.0.0.1", "IPv4-compatible address of 127.0.0.1, loopback"],
    ["::7f00:1", "IPv4-compatible address of 127.0.0.1, loopback"],
    ["::0.0.0.2", "IPv4-compatible address of 0.0.0.2, unspecified"],
    ["64:ff9b::a9fe:a9fe", "NAT64 address of 169.254.169.254, cloud metadata"],
    ["64:ff9b::127.0.0.1", "NAT64 address of 127.0.0.1, loopback"],
    ["64:ff9b::c0a8:101", "NAT64 address of 192.168.1.1, RFC 1918"],
    ["2002:7f00:1::", "6to4 address of 127.0.0.1, loopback"],
    ["2002:a9fe:a9fe:1234:5678::1", "6to4 address of 169.254.169.254"],
    ["2002:0a00:0001::", "6to4 address of 10.0.0.1"],
    // Teredo: client 127.0.0.1 is stored as 7f00:0001 XOR ffff:ffff = 80ff:fffe.
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo address of 127.0.0.1, loopback"],
    ["2001:0:4136:e378:8000:63bf:3f57:fefd", "Teredo address of 192.168.1.2, RFC 1918"],
    // ... and the server half (bits 32-63) is checked as well.
    ["2001:0:a00:1:8000:63bf:f7f7:f7f7", "Teredo address of 10.0.0.1, RFC 1918"],
  ])("%s is refused", (address, reason) => {
    expect(isBlockedAddress(address)).toContain(reason);
  });

  test.each([
    "::ffff:8.8.8.8",
    "::ffff:808:808",
    "::8.8.8.8",
    "64:ff9b::8.8.8.8",
    "64:ff9b::101:101",
    "2002:808:808::1",
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7", // server 65.54.227.120, client 8.8.8.8
  ])("%s carries a public IPv4 address and passes", (address) => {
    expect(isBlockedAddress(address)).toBeNull();
  });

  test("every embedding of every blocked IPv4 range is refused", () => {
    const random = prng(2);
    const v4Rows = BLOCKED_RANGES.filter((r) => !r.cidr.includes(":"));
    for (const row of v4Rows) {
      for (const v4 of sampleRange(row.cidr, random)) {
        const b = parseHostAddress(v4)!.bytes;
        const hex = (i: number) => (((b[i] ?? 0) << 8) | (b[i + 1] ?? 0)).toString(16);
        const inverted = (i: number) =>
          (~(((b[i] ?? 0) << 8) | (b[i + 1] ?? 0)) & 0xffff).toString(16);
        for (const v6 of [
          `::ffff:${v4}`,
          `::${v4}`,
          `64:ff9b::${v4}`,
          `2002:${hex(0)}:${hex(2)}::1`,
          `2001:0:4136:e378:8000:63bf:${inverted(0)}:${inverted(2)}`,
        ]) {
          expect(isBlockedAddress(v6), `${v6} (${v4} in ${row.cidr})`).not.toBeNull();
        }
      }
    }
  });
});

describe("isBlockedAddress input", () => {
  test("accepts odd IPv4 notations and IPv6 with brackets or zone ids", () => {
    for (const odd of [
      "2130706433",
      "0x7f000001",
      "0177.0.0.1",
      "0x7f.1",
      "127.1",
      "127.0.1",
      "017700000001",
    ]) {
      expect(isBlockedAddress(odd), odd).toContain("loopback");
    }
    expect(isBlockedAddress("[::1]")).toContain("loopback");
    expect(isBlockedAddress("fe80::1%eth0")).toContain("link-local");
    expect(isBlockedAddress("fe80::1%25eth0")).toContain("link-local");
  });

  test("fails closed on anything that is not an IP address", () => {
    for (const junk of [
      "",
      "example.com",
      "1.2.3.4.5",
      "256.0.0.1",
      "::1::",
      "[::1",
      "localhost",
    ]) {
      expect(isBlockedAddress(junk), junk).toBe("not an IP address");
    }
  });

  test("blockedReason takes raw bytes", () => {
    expect(blockedReason(Uint8Array.of(10, 0, 0, 1))).toContain("RFC 1918");
    expect(blockedReason(Uint8Array.of(8, 8, 4, 4))).toBeNull();
  });
});
