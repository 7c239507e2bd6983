import { describe, expect, test } from "vitest";
import { makePublicIds, PUBLIC_ID_PREFIX, type PublicIdKind } from "./ids-public.ts";

const secret = (fill: number) => Buffer.alloc(32, fill);
const ids = makePublicIds({ secret: secret(7), legacyMax: { delivery: 100, attempt: 500 } });
const KINDS: PublicIdKind[] = ["delivery", "attempt"];
const SHAPE = { delivery: /^dlv_[A-V][0-9A-Za-z]{10}$/, attempt: /^atmpt_[A-V][0-9A-Za-z]{10}$/ };

/** bits that differ between the 64-bit values behind two shown ids */
function bitsApart(a: string, b: string): number {
  const value = (s: string) => {
    const tail = s.slice(s.indexOf("_") + 1);
    let v = BigInt(
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".indexOf(tail[0]!) - 10,
    );
    for (const c of tail.slice(1))
      v =
        v * 62n +
        BigInt("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".indexOf(c));
    return v;
  };
  return [...(value(a) ^ value(b)).toString(2)].filter((c) => c === "1").length;
}

describe("format and parse", () => {
  test("round trip, including 0, 1, the 32-bit edges and 2^53 - 1", () => {
    const keys = [0, 1, 2, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, Number.MAX_SAFE_INTEGER];
    for (let n = 1; n < 5_000; n++) keys.push(n);
    for (let i = 0; i < 5_000; i++) keys.push(Math.floor(Math.random() * Number.MAX_SAFE_INTEGER));
    for (const kind of KINDS)
      for (const n of keys) {
        const shown = ids.format(kind, n);
        expect(shown).toMatch(SHAPE[kind]);
        expect(ids.parse(kind, shown)).toBe(n);
      }
  });

  test("consecutive keys give unrelated ids: no order, no shared prefix, half the bits flipped", () => {
    const run = Array.from({ length: 1_000 }, (_, i) => ids.format("delivery", 10_000 + i));
    expect(new Set(run).size).toBe(run.length);
    expect([...run].sort()).not.toEqual(run);
    // sorted by shown id, the keys come out shuffled: about half the neighbours rise
    const rising = run.slice(1).filter((id, i) => id > run[i]!).length;
    expect(rising).toBeGreaterThan(400);
    expect(rising).toBeLessThan(600);
    const samePrefix = run.slice(1).filter((id, i) => id.slice(0, 7) === run[i]!.slice(0, 7));
    expect(samePrefix.length).toBeLessThan(10);
    const flipped = run.slice(1).map((id, i) => bitsApart(id, run[i]!));
    const mean = flipped.reduce((a, b) => a + b, 0) / flipped.length;
    expect(mean).toBeGreaterThan(28);
    expect(mean).toBeLessThan(36);
    // and no shown id holds the number itself
    for (const [i, id] of run.entries()) expect(id).not.toContain(String(10_000 + i));
  });

  test("another secret, or the other kind, gives other ids; each parses only as its own", () => {
    const other = makePublicIds({ secret: secret(8), legacyMax: { delivery: 0, attempt: 0 } });
    for (let n = 1; n <= 200; n++) {
      const d = ids.format("delivery", n);
      expect(other.format("delivery", n)).not.toBe(d);
      expect(ids.format("attempt", n).slice(PUBLIC_ID_PREFIX.attempt.length)).not.toBe(
        d.slice(PUBLIC_ID_PREFIX.delivery.length),
      );
      expect(ids.parse("attempt", d)).toBeNull();
      expect(other.parse("delivery", d)).not.toBe(n);
    }
  });

  test("format refuses what is no row key", () => {
    for (const n of [-1, 1.5, Number.MAX_SAFE_INTEGER + 1, Number.NaN])
      expect(() => ids.format("delivery", n)).toThrow(RangeError);
  });
});

describe("read: what a caller typed", () => {
  test("a shown id names its row, for operators and tenants alike", () => {
    for (const reader of ["operator", "tenant"] as const)
      expect(ids.read("delivery", ids.format("delivery", 123_456), reader)).toEqual({
        ok: true,
        id: 123_456,
      });
  });

  test("old ids (dlv_17, atmpt_9, a bare number): operators always, tenants up to the old maximum", () => {
    for (const raw of ["dlv_17", "17", "dlv_100", "100"])
      expect(ids.read("delivery", raw, "tenant")).toEqual({
        ok: true,
        id: Number(raw.replace("dlv_", "")),
      });
    for (const raw of ["dlv_101", "101", "dlv_123456"]) {
      expect(ids.read("delivery", raw, "tenant")).toEqual({ ok: false, reason: "unknown" });
      expect(ids.read("delivery", raw, "operator")).toEqual({
        ok: true,
        id: Number(raw.replace("dlv_", "")),
      });
    }
    expect(ids.read("attempt", "atmpt_500", "tenant")).toEqual({ ok: true, id: 500 });
    expect(ids.read("attempt", "atmpt_501", "tenant")).toEqual({ ok: false, reason: "unknown" });
    expect(ids.read("attempt", "9", "operator")).toEqual({ ok: true, id: 9 });
  });

  test("the right shape naming no possible row is unknown; anything else is malformed", () => {
    const shown = ids.format("delivery", 42);
    // the largest 11-character value is past 2^64; most others decode past 2^53
    for (const raw of ["dlv_Vzzzzzzzzzz", "dlv_Azzzzzzzzzz", ids.format("delivery", 0)])
      expect(ids.read("delivery", raw, "operator")).toEqual({ ok: false, reason: "unknown" });
    for (const raw of [
      "",
      "dlv_",
      "dlv_0",
      "0",
      "dlv_-1",
      "dlv_1.5",
      "dlv_1e3",
      " 17",
      "0x11",
      "dlv_9007199254740993",
      "99999999999999999",
      `${shown}x`,
      shown.slice(0, -1),
      shown.toLowerCase(),
      `atmpt_${shown.slice(4)}`,
      shown.slice(4),
      "dlv_Wzzzzzzzzzz",
      "msg_17",
      "__proto__",
    ])
      expect(ids.read("delivery", raw, "operator"), raw).toEqual({
        ok: false,
        reason: "malformed",
      });
  });
});
