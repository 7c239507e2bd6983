import { expect, test } from "vitest";
import { childTraceparent, formatTraceparent, parseTraceparent } from "./traceparent.ts";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";

test("a version-00 header reads back as written", () => {
  const header = `00-${TRACE}-${SPAN}-01`;
  expect(parseTraceparent(header)).toEqual({ traceId: TRACE, spanId: SPAN, flags: 1 });
  expect(formatTraceparent(parseTraceparent(header)!)).toBe(header);
  expect(parseTraceparent(`  ${header} `)?.traceId).toBe(TRACE);
});

test("a later version is read by its first four fields and written as 00", () => {
  expect(formatTraceparent(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-adds`)!)).toBe(
    `00-${TRACE}-${SPAN}-01`,
  );
});

test.each([
  ["absent", undefined],
  ["not a string", 42],
  ["empty", ""],
  ["junk", "not a traceparent"],
  ["upper-case hex", `00-${TRACE.toUpperCase()}-${SPAN}-01`],
  ["all-zero trace id", `00-${"0".repeat(32)}-${SPAN}-01`],
  ["all-zero parent id", `00-${TRACE}-${"0".repeat(16)}-01`],
  ["version ff", `ff-${TRACE}-${SPAN}-01`],
  ["00 with more fields", `00-${TRACE}-${SPAN}-01-extra`],
  ["short trace id", `00-${TRACE.slice(1)}-${SPAN}-01`],
  ["too long", `00-${TRACE}-${SPAN}-01${" ".repeat(600)}`],
])("%s is not a traceparent", (_, header) => {
  expect(parseTraceparent(header)).toBeNull();
});

test("a child keeps the trace and flags under a new span id", () => {
  const child = childTraceparent(`00-${TRACE}-${SPAN}-00`)!;
  expect(child).toMatch(new RegExp(`^00-${TRACE}-[0-9a-f]{16}-00$`));
  expect(child).not.toContain(SPAN);
  expect(childTraceparent("junk")).toBeNull();
});
