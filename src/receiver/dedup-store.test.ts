import { describe, expect, test } from "vitest";
import { makeDedupGate } from "./dedup-gate.ts";
import { makeMemoryDedupStore } from "./dedup-store.ts";

describe("the in-memory dedup store", () => {
  test("a mark lasts ttlMs, then the id is new again", () => {
    let now = 1_000_000;
    const store = makeMemoryDedupStore({ ttlMs: 60_000, clock: () => now });
    expect(store.seen("msg_a")).toBe(false);
    expect(store.markSeen("msg_a")).toBe(true);
    expect(store.markSeen("msg_a")).toBe(false);
    now += 59_999;
    expect(store.seen("msg_a")).toBe(true);
    now += 1;
    expect(store.seen("msg_a")).toBe(false);
    expect(store.size).toBe(0);
    expect(store.markSeen("msg_a")).toBe(true);
  });

  test("bounded: past maxEntries the oldest marks are dropped first", () => {
    let now = 0;
    const store = makeMemoryDedupStore({ maxEntries: 3, clock: () => now++ });
    for (const id of ["a", "b", "c", "d"]) expect(store.markSeen(id)).toBe(true);
    expect(store.size).toBe(3);
    expect(store.seen("a")).toBe(false);
    expect(["b", "c", "d"].every((id) => store.seen(id))).toBe(true);
    for (let i = 0; i < 1000; i++) store.markSeen(`x${i}`);
    expect(store.size).toBe(3);
  });

  test("expired marks are dropped as time passes, without a lookup of them", () => {
    let now = 0;
    const store = makeMemoryDedupStore({ ttlMs: 10, clock: () => now });
    for (let i = 0; i < 100; i++) store.markSeen(`m${i}`);
    now = 10;
    store.markSeen("fresh");
    expect(store.size).toBe(1);
  });

  test("options are checked", () => {
    expect(() => makeMemoryDedupStore({ maxEntries: 0 })).toThrow(/maxEntries/);
    expect(() => makeMemoryDedupStore({ ttlMs: 0 })).toThrow(/ttlMs/);
  });
});

describe("the middlewares' dedup gate", () => {
  test("concurrent copies of one message: one is handled, the others wait and are duplicates", async () => {
    const gate = makeDedupGate(makeMemoryDedupStore());
    const first = await gate.enter("msg_1");
    expect(first).not.toBe("duplicate");
    const copies = Array.from({ length: 5 }, () => gate.enter("msg_1"));
    await new Promise((r) => setTimeout(r, 10));
    if (first === "duplicate") throw new Error("unreachable");
    await first.leave(true);
    expect(await Promise.all(copies)).toEqual(Array(5).fill("duplicate"));
  });

  test("a copy waiting on a failed first attempt is handled itself; the id is not marked", async () => {
    const store = makeMemoryDedupStore();
    const gate = makeDedupGate(store);
    const first = await gate.enter("msg_2");
    const second = gate.enter("msg_2");
    if (first === "duplicate") throw new Error("unreachable");
    await first.leave(false);
    const ticket = await second;
    expect(ticket).not.toBe("duplicate");
    expect(store.seen("msg_2")).toBe(false);
    if (ticket !== "duplicate") await ticket.leave(true);
    expect(store.seen("msg_2")).toBe(true);
    expect(await gate.enter("msg_2")).toBe("duplicate");
  });

  test("a store that fails to mark still wakes the waiting copies, and the error surfaces", async () => {
    const gate = makeDedupGate({
      seen: () => false,
      markSeen: () => Promise.reject(new Error("store down")),
    });
    const first = await gate.enter("msg_3");
    const second = gate.enter("msg_3");
    if (first === "duplicate") throw new Error("unreachable");
    await expect(first.leave(true)).rejects.toThrow(/store down/);
    expect(await second).not.toBe("duplicate");
  });
});
