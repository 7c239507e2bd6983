import fc from "fast-check";
import { expect, test } from "vitest";
import { invalidUtf8Offset, utf8Problem } from "./utf8.ts";

const strict = new TextDecoder("utf-8", { fatal: true });
const decodes = (b: Uint8Array) => {
  try {
    strict.decode(b);
    return true;
  } catch {
    return false;
  }
};

test("agrees with a strict decoder on any bytes, and everything before the offset is UTF-8", () => {
  // bytes biased toward the lead and continuation ranges, so sequences are often almost right
  const byte = fc.oneof(
    fc.integer({ min: 0, max: 0x7f }),
    fc.integer({ min: 0x80, max: 0xbf }),
    fc.integer({ min: 0xc0, max: 0xff }),
    fc.constantFrom(0xe0, 0xed, 0xf0, 0xf4, 0xa0, 0x9f, 0x90, 0x8f),
  );
  fc.assert(
    fc.property(fc.array(byte, { maxLength: 24 }), (arr) => {
      const bytes = Uint8Array.from(arr);
      const at = invalidUtf8Offset(bytes);
      expect(at === -1).toBe(decodes(bytes));
      if (at >= 0) expect(decodes(bytes.subarray(0, at))).toBe(true);
    }),
    { numRuns: 5_000 },
  );
});

test("the offset is where the bad sequence starts", () => {
  const cases: [number[], number][] = [
    [[0x61, 0xff], 1],
    [[0x61, 0x62, 0xc0, 0xaf], 2],
    [[0xed, 0xa0, 0x80], 0],
    [[0x61, 0xf4, 0x90, 0x80, 0x80], 1],
    [[0xe2, 0x82], 0],
    [[0xc3, 0xa9, 0x80], 2],
  ];
  for (const [bytes, at] of cases) expect(invalidUtf8Offset(Uint8Array.from(bytes))).toBe(at);
  expect(invalidUtf8Offset(Buffer.from("café ✓ 😀"))).toBe(-1);
  expect(utf8Problem(Buffer.from([0x7b, 0xff, 0xfe]), "the body")).toBe(
    "the body is not valid UTF-8: byte offset 1 (bytes ff fe) does not start a well-formed character",
  );
  expect(utf8Problem(Buffer.from("{}"), "the body")).toBeNull();
});
