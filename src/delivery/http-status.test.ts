import { describe, expect, test } from "vitest";
import { classifyStatus } from "./http-status.ts";
import { parseRetryAfter } from "./retry-after.ts";

describe("HTTP status", () => {
  test("a Retry-After header reads as a delay in ms", () => {
    expect(parseRetryAfter("2")).toBe(2_000);
    expect(
      parseRetryAfter("Wed, 21 Oct 2015 07:28:10 GMT", Date.parse("Wed, 21 Oct 2015 07:28:00 GMT")),
    ).toBe(10_000);
    expect(parseRetryAfter("soon")).toBeNull();
    expect(parseRetryAfter(undefined)).toBeNull();
  });

  test("status classification follows docs/delivery.md, What is retried", () => {
    const verdict = (s: number) => classifyStatus(s).verdict;
    for (const s of [200, 201, 204, 299]) expect(verdict(s)).toBe("success");
    for (const s of [408, 425, 429, 500, 502, 503, 504, 599]) expect(verdict(s)).toBe("transient");
    for (const s of [301, 302, 307, 308, 400, 401, 403, 404, 410, 422])
      expect(verdict(s)).toBe("permanent");
    expect(classifyStatus(401).errorKind).toBe("credentials");
    expect(classifyStatus(403).errorKind).toBe("credentials");
    expect(classifyStatus(410).errorKind).toBe("gone");
    expect(classifyStatus(302).errorKind).toBe("redirect");
  });
});
