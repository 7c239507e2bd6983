import { isIPv4, isIPv6 } from "node:net";
import { describe, expect, test } from "vitest";
import { cidrContains, endsInNumber, formatIp, parseCidr, parseHostAddress } from "./ip-address.ts";

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

/** What the WHATWG URL parser makes of a host: its hostname, or null if it refuses it. */
function urlHost(host: string): string | null {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return null;
  }
}

describe("parseHostAddress", () => {
  test.each([
    ["127.0.0.1", "127.0.0.1"],
    ["2130706433", "127.0.0.1"],
    ["0x7f000001", "127.0.0.1"],
    ["0X7F000001", "127.0.0.1"],
    ["0177.0.0.1", "127.0.0.1"],
    ["0x7f.0x0.0x0.0x1", "127.0.0.1"],
    ["0x7f.1", "127.0.0.1"],
    ["127.1", "127.0.0.1"],
    ["127.0.1", "127.0.0.1"],
    ["127.0.0.1.", "127.0.0.1"],
    ["0x00000000007f.0.0.01", "127.0.0.1"],
    ["0", "0.0.0.0"],
    ["0x", "0.0.0.0"],
    ["4294967295", "255.255.255.255"],
    ["169.16689662", "169.254.169.254"],
    ["[::1]", "::1"],
    ["::ffff:127.0.0.1", "::ffff:7f00:1"],
    ["[::FFFF:7F00:1]", "::ffff:7f00:1"],
    ["fe80::1%eth0", "fe80::1"],
    ["[fe80::1%25eth0]", "fe80::1"],
    ["0:0:0:0:0:0:0:1", "::1"],
    ["1:0:0:0:0:0:0:0", "1::"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:0db8:0000:0001:0000:0000:0000:0001", "2001:db8:0:1::1"],
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0"],
  ])("%s is %s", (input, address) => {
    expect(parseHostAddress(input)?.address).toBe(address);
  });

  test.each([
    "",
    ".",
    "example.com",
    "localhost",
    "1.2.3.4.5",
    "256.0.0.1",
    "1.2.3.256",
    "1.2.65536",
    "4294967296",
    "1.2.3.09",
    "08",
    "127.0.0.1..",
    "0x7g",
    "0x7f.foo",
    "[::1",
    "[127.0.0.1]",
    "::1::",
    ":::1",
    "1:2:3:4:5:6:7:8:9",
    "::1:2:3:4:5:6:7:8",
    "12345::",
    "::ffff:1.2.3.256",
    "::ffff:01.2.3.4",
    "::1.2.3",
    "1.2.3.4::",
  ])("%j is not an IP address", (input) => {
    expect(parseHostAddress(input)).toBeNull();
  });

  test("agrees with the URL parser on 5,000 random IPv4 notations", () => {
    const random = prng(7);
    const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;
    const render = (n: number) =>
      pick([
        () => String(n),
        () => `0${"0".repeat(Math.floor(random() * 3))}${n.toString(8)}`,
        () => `${pick(["0x", "0X"])}${"0".repeat(Math.floor(random() * 3))}${n.toString(16)}`,
        () => `0x${n.toString(16).toUpperCase()}`,
      ])();
    for (let i = 0; i < 5000; i++) {
      const value = Math.floor(random() * 2 ** 32);
      const parts = 1 + Math.floor(random() * 4);
      const bytes = [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff];
      const last = value % 256 ** (5 - parts);
      let text = [...bytes.slice(0, parts - 1), last].map(render).join(".");
      if (random() < 0.1) text += ".";
      const expected = urlHost(text);
      expect(expected, text).not.toBeNull();
      expect(parseHostAddress(text)?.address, text).toBe(expected);
    }
  });

  test("never disagrees with the URL parser on random digit soup", () => {
    const random = prng(11);
    const alphabet = "0123456789abcdefx.";
    for (let i = 0; i < 20_000; i++) {
      const length = 1 + Math.floor(random() * 14);
      let text = "";
      for (let j = 0; j < length; j++) text += alphabet[Math.floor(random() * alphabet.length)];
      const viaUrl = urlHost(text);
      const ours = parseHostAddress(text)?.address ?? null;
      if (viaUrl !== null && isIPv4(viaUrl)) {
        expect(ours, text).toBe(viaUrl); // the URL parser sees an address: so must we
      } else if (viaUrl !== null) {
        expect(ours, text).toBeNull(); // a name to the URL parser is a name to us
      } else if (ours !== null) {
        // The URL parser refuses the host outright; we may still read it as an address, which
        // only ever makes the guard stricter. It must then be a real address.
        expect(isIPv4(ours), text).toBe(true);
      }
    }
  });

  test("formats 5,000 random IPv6 addresses exactly as the URL parser does", () => {
    const random = prng(13);
    for (let i = 0; i < 5000; i++) {
      // Mostly-zero groups give the compression rules something to do.
      const bytes = new Uint8Array(16);
      for (let g = 0; g < 8; g++) {
        if (random() < 0.5) continue;
        const n = random() < 0.3 ? 1 : Math.floor(random() * 65536);
        bytes[2 * g] = n >> 8;
        bytes[2 * g + 1] = n & 0xff;
      }
      const full = [...Array(8).keys()]
        .map((g) =>
          (((bytes[2 * g] ?? 0) << 8) | (bytes[2 * g + 1] ?? 0)).toString(16).padStart(4, "0"),
        )
        .join(":");
      const canonical = urlHost(`[${full}]`)!.slice(1, -1);
      expect(formatIp(bytes), full).toBe(canonical);
      expect(parseHostAddress(full)?.address, full).toBe(canonical);
      expect(parseHostAddress(canonical)?.address, canonical).toBe(canonical);
      const dotted = `${full.split(":").slice(0, 6).join(":")}:${[...bytes.slice(12)].join(".")}`;
      expect(parseHostAddress(dotted)?.address, dotted).toBe(canonical);
      expect(isIPv6(canonical)).toBe(true);
    }
  });
});

describe("CIDRs", () => {
  test("parse, clear host bits and match", () => {
    expect(parseCidr("10.1.2.3/8")?.text).toBe("10.0.0.0/8");
    expect(parseCidr("127.0.0.1")?.text).toBe("127.0.0.1/32");
    expect(parseCidr("FD00::1/8")?.text).toBe("fd00::/8");
    const net = parseCidr("172.16.0.0/12")!;
    expect(cidrContains(net, parseHostAddress("172.31.255.255")!.bytes)).toBe(true);
    expect(cidrContains(net, parseHostAddress("172.32.0.0")!.bytes)).toBe(false);
    expect(cidrContains(net, parseHostAddress("::ffff:172.16.0.1")!.bytes)).toBe(false);
    expect(cidrContains(parseCidr("0.0.0.0/0")!, parseHostAddress("8.8.8.8")!.bytes)).toBe(true);
  });

  test.each([
    "10.0.0.0/33",
    "::/129",
    "10.1/16",
    "0x7f.1/8",
    "10.0.0.0/",
    "10.0.0.0/08",
    "10.0.0.0/-1",
    "example.com",
  ])("%s is not a CIDR", (text) => {
    expect(parseCidr(text)).toBeNull();
  });
});

test("endsInNumber spots hosts the URL parser would read as IPv4", () => {
  expect(endsInNumber("1.2.3.09")).toBe(true);
  expect(endsInNumber("foo.0x7f")).toBe(true);
  expect(endsInNumber("foo.123.")).toBe(true);
  expect(endsInNumber("example.com")).toBe(false);
  expect(endsInNumber("0x7f.foo")).toBe(false);
});
