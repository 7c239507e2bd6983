import { expect, test } from "vitest";
import { looksLikeId, newId } from "./ids.ts";

test("ids sort by creation, even within one millisecond", () => {
  const ids = Array.from({ length: 1_000 }, () => newId("msg_"));
  expect([...ids].sort()).toEqual(ids);
  expect(new Set(ids).size).toBe(ids.length);
  expect(newId("msg_", 1_000) < newId("msg_", Date.now() + 10_000)).toBe(true);
  for (const id of ids.slice(0, 10)) expect(looksLikeId(id, "msg_")).toBe(true);
  expect(looksLikeId("msg_short", "msg_")).toBe(false);
});
