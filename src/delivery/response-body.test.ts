import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { describe, expect, test } from "vitest";
import { bodyText, readableBody } from "./response-body.ts";

const LIMIT = 64 * 1024;
const read = (bytes: Buffer, encoding?: string, truncated = false) =>
  readableBody(bytes, truncated, encoding, LIMIT);

describe("readableBody", () => {
  test("UTF-8 text is kept as it is; an empty body is null", async () => {
    expect(await read(Buffer.from('{"ok":true,"name":"grüße ✓"}'))).toBe(
      '{"ok":true,"name":"grüße ✓"}',
    );
    expect(await read(Buffer.alloc(0))).toBeNull();
  });

  test("a NUL byte makes the body binary: described with its size and a hex prefix", async () => {
    const text = await read(Buffer.from("ok\0ok"));
    expect(text).toBe("[binary body: 5 bytes; starts (hex) 6f6b006f6b]");
    expect(text).not.toContain("\0");
  });

  test("invalid UTF-8 is described, never rewritten to U+FFFD", async () => {
    const png = Buffer.from([
      0x89,
      0x50,
      0x4e,
      0x47,
      0x0d,
      0x0a,
      0x1a,
      0x0a,
      ...Array(100).fill(0xff),
    ]);
    const text = await read(png);
    expect(text).toMatch(
      /^\[binary body: 108 bytes; starts \(hex\) 89504e470d0a1a0a(ff){24}\.\.\.\]$/,
    );
    expect(await read(Buffer.from([0x61, 0xc3, 0x28]))).toMatch(/^\[binary body: 3 bytes/);
  });

  test("a body cut by the read limit inside a character drops that character only", () => {
    const whole = Buffer.from("abc€"); // € is 3 bytes
    expect(bodyText(whole.subarray(0, 5), true)).toBe("abc");
    expect(bodyText(whole.subarray(0, 4), true)).toBe("abc");
    expect(bodyText(whole, true)).toBe("abc€");
    // not cut by the limit: an incomplete character is invalid UTF-8
    expect(bodyText(whole.subarray(0, 5), false)).toMatch(/^\[binary body: 5 bytes/);
    // a cut body says it was cut
    expect(bodyText(Buffer.from([0xff, 0xfe]), true)).toMatch(/^\[binary body: more than 2 bytes/);
  });

  test("gzip, x-gzip, deflate and br bodies are decompressed", async () => {
    const text = "accepted: conversion 42";
    expect(await read(gzipSync(text), "gzip")).toBe(text);
    expect(await read(gzipSync(text), " X-GZIP ")).toBe(text);
    expect(await read(deflateSync(text), "deflate")).toBe(text);
    expect(await read(brotliCompressSync(text), "br")).toBe(text);
  });

  test("a compressed body cut by the read limit decompresses as far as it goes", async () => {
    const text = "x".repeat(10).concat(Array.from({ length: 20_000 }, (_, i) => i).join(","));
    const packed = gzipSync(text);
    const cut = await read(packed.subarray(0, Math.floor(packed.length / 2)), "gzip", true);
    expect(cut).not.toBeNull();
    expect(text.startsWith(cut!)).toBe(true);
    expect(cut!.length).toBeGreaterThan(100);
  });

  test("a decompression bomb stops at the limit", async () => {
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, "A"));
    expect(bomb.length).toBeLessThan(LIMIT);
    const text = await read(bomb, "gzip");
    expect(text).toBe("A".repeat(LIMIT));
  });

  test("compressed binary is described; so is a stream that does not decompress and an unknown encoding", async () => {
    expect(await read(gzipSync(Buffer.from([0, 1, 2, 3])), "gzip")).toBe(
      "[binary body: 4 bytes; starts (hex) 00010203]",
    );
    expect(await read(Buffer.from("not gzip at all"), "gzip")).toMatch(
      /^\[gzip-encoded body that did not decompress: 15 bytes; starts \(hex\) 6e6f74/,
    );
    expect(await read(Buffer.from([1, 2, 3]), "zstd")).toBe(
      "[zstd-encoded body: 3 bytes; starts (hex) 010203]",
    );
    // a hostile encoding name is shown as printable ASCII only, and cut short
    const named = await read(Buffer.from([1]), `x\0\n${"y".repeat(100)}`);
    expect(named).toMatch(/^\[x\?\?y{29}-encoded body: 1 bytes/);
    expect(await read(Buffer.from([1]), "constructor")).toMatch(/^\[constructor-encoded body/);
    expect(await read(Buffer.from("plain"), "identity")).toBe("plain");
  });
});
