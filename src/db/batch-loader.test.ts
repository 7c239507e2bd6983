import { expect, test } from "vitest";
import { makeBatchLoader } from "./batch-loader.ts";

test("keys asked for in one tick share a fetch; keys asked for during a fetch share the next one", async () => {
  const fetches: string[][] = [];
  let release: () => void = () => {};
  const loader = makeBatchLoader<string, number>(async (keys) => {
    fetches.push(keys);
    if (fetches.length === 1) await new Promise<void>((r) => (release = r));
    return new Map(keys.map((k) => [k, k.length]));
  });
  const first = [loader.load("a"), loader.load("bb"), loader.load("a")];
  await new Promise((r) => setImmediate(r));
  expect(fetches).toEqual([["a", "bb"]]);
  // asked while the first fetch runs: none starts until it ends, then all go together
  const second = [loader.load("ccc"), loader.load("dddd")];
  await new Promise((r) => setImmediate(r));
  expect(fetches).toHaveLength(1);
  release();
  expect(await Promise.all([...first, ...second])).toEqual([1, 2, 1, 3, 4]);
  expect(fetches).toEqual([
    ["a", "bb"],
    ["ccc", "dddd"],
  ]);
});

test("a failed fetch rejects its own callers only; unknown keys resolve undefined", async () => {
  let calls = 0;
  const loader = makeBatchLoader<string, string>(async (keys) => {
    calls++;
    if (calls === 1) throw new Error("db down");
    return new Map(keys.filter((k) => k !== "missing").map((k) => [k, k.toUpperCase()]));
  });
  await expect(loader.load("x")).rejects.toThrow("db down");
  expect(await Promise.all([loader.load("y"), loader.load("missing")])).toEqual(["Y", undefined]);
});
