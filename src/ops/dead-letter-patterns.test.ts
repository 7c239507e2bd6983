/**
 * detectPattern as a pure function: one fixture per pattern, the order of the table (first
 * match wins), and the thresholds at their edges.
 */
import { describe, expect, test } from "vitest";
import { type DeadLetterShape, detectPattern, PATTERNS } from "./dead-letter-patterns.ts";

const HOUR = 3_600_000;
const T0 = new Date("2025-03-10T12:00:00.000Z");
const at = (hoursAfterT0: number) => new Date(T0.getTime() + hoursAfterT0 * HOUR);

/** A shape with nothing remarkable about it (mixed), overridden per fixture. */
function shape(s: Partial<DeadLetterShape>): DeadLetterShape {
  return {
    count: 4,
    credentials: 0,
    rateLimited: 0,
    maxIn15Minutes: 1,
    firstAt: at(0),
    lastAt: at(3),
    distinctHours: 4,
    ...s,
  };
}

const actionOf = (p: string) => PATTERNS.find((x) => x.pattern === p)?.suggestedAction;

describe("one fixture per pattern", () => {
  test("credentials: most deaths answered 401/403", () => {
    // 6 dead over 3 hours: four 401s, one 403, one 500
    const p = detectPattern(
      shape({ count: 6, credentials: 5, maxIn15Minutes: 2, distinctHours: 3 }),
    );
    expect(p.pattern).toBe("credentials");
    expect(p.suggestedAction).toBe(actionOf("credentials"));
    expect(p.suggestedAction).toMatch(/401\/403/);
  });

  test("rate_limited: most deaths answered 429", () => {
    const p = detectPattern(shape({ count: 4, rateLimited: 3 }));
    expect(p.pattern).toBe("rate_limited");
    expect(p.suggestedAction).toMatch(/429/);
    expect(p.suggestedAction).toMatch(/ratePerSecond/);
  });

  test("outage_cluster: most deaths inside one 15-minute window", () => {
    // 12 dead: 10 within ten minutes, two stragglers on other days
    const p = detectPattern(
      shape({ count: 12, maxIn15Minutes: 10, firstAt: at(-48), lastAt: at(0), distinctHours: 3 }),
    );
    expect(p.pattern).toBe("outage_cluster");
    expect(p.suggestedAction).toMatch(/down/);
  });

  test("gradual_accumulation: a few a day, spread over days", () => {
    // 12 dead: three a day for four days, never two in the same 15 minutes
    const p = detectPattern(
      shape({ count: 12, maxIn15Minutes: 1, firstAt: at(-87), lastAt: at(-2), distinctHours: 12 }),
    );
    expect(p.pattern).toBe("gradual_accumulation");
    expect(p.suggestedAction).toMatch(/Inspect individual attempts/);
  });

  test("mixed: nothing stands out", () => {
    // one 500, one 401, one 429, one timeout within three hours
    const p = detectPattern(shape({ count: 4, credentials: 1, rateLimited: 1, maxIn15Minutes: 1 }));
    expect(p.pattern).toBe("mixed");
    expect(p.suggestedAction).toMatch(/No single cause/);
  });

  test("no dead letters at all: mixed, not a division by zero", () => {
    const p = detectPattern(
      shape({ count: 0, credentials: 0, rateLimited: 0, maxIn15Minutes: 0, distinctHours: 0 }),
    );
    expect(p.pattern).toBe("mixed");
  });
});

describe("precedence: the first row of the table that matches wins", () => {
  test("the table order is missing_field, body_rule, credentials, rate_limited, outage_cluster, gradual_accumulation", () => {
    expect(PATTERNS.map((p) => p.pattern)).toEqual([
      "missing_field",
      "body_rule",
      "credentials",
      "rate_limited",
      "outage_cluster",
      "gradual_accumulation",
    ]);
  });

  test("a burst of 401s is credentials, not an outage", () => {
    const p = detectPattern(
      shape({ count: 10, credentials: 10, maxIn15Minutes: 10, distinctHours: 1 }),
    );
    expect(p.pattern).toBe("credentials");
  });

  test("a burst of 429s is rate_limited, not an outage", () => {
    const p = detectPattern(
      shape({ count: 10, rateLimited: 9, maxIn15Minutes: 10, distinctHours: 1 }),
    );
    expect(p.pattern).toBe("rate_limited");
  });

  test("half 401 and half 429: credentials (earlier in the table)", () => {
    const p = detectPattern(shape({ count: 4, credentials: 2, rateLimited: 2 }));
    expect(p.pattern).toBe("credentials");
  });
});

describe("thresholds at their edges", () => {
  test("credentials at exactly half matches, just under does not", () => {
    expect(detectPattern(shape({ count: 10, credentials: 5 })).pattern).toBe("credentials");
    expect(detectPattern(shape({ count: 10, credentials: 4 })).pattern).toBe("mixed");
  });

  test("rate_limited at exactly half matches, just under does not", () => {
    expect(detectPattern(shape({ count: 6, rateLimited: 3 })).pattern).toBe("rate_limited");
    expect(detectPattern(shape({ count: 7, rateLimited: 3 })).pattern).toBe("mixed");
  });

  test("outage_cluster needs at least 5 dead letters", () => {
    expect(detectPattern(shape({ count: 4, maxIn15Minutes: 4, distinctHours: 1 })).pattern).toBe(
      "mixed",
    );
    expect(detectPattern(shape({ count: 5, maxIn15Minutes: 5, distinctHours: 1 })).pattern).toBe(
      "outage_cluster",
    );
  });

  test("outage_cluster needs 60% in the window", () => {
    expect(detectPattern(shape({ count: 10, maxIn15Minutes: 6 })).pattern).toBe("outage_cluster");
    expect(detectPattern(shape({ count: 10, maxIn15Minutes: 5 })).pattern).toBe("mixed");
  });

  test("gradual_accumulation needs a span of at least 24 hours", () => {
    const base = { count: 8, maxIn15Minutes: 2, distinctHours: 8, firstAt: at(0) };
    expect(detectPattern(shape({ ...base, lastAt: at(24) })).pattern).toBe("gradual_accumulation");
    expect(detectPattern(shape({ ...base, lastAt: new Date(at(24).getTime() - 1) })).pattern).toBe(
      "mixed",
    );
  });

  test("gradual_accumulation needs at least 3 distinct hours", () => {
    const base = { count: 8, maxIn15Minutes: 2, firstAt: at(0), lastAt: at(48) };
    expect(detectPattern(shape({ ...base, distinctHours: 3 })).pattern).toBe(
      "gradual_accumulation",
    );
    expect(detectPattern(shape({ ...base, distinctHours: 2 })).pattern).toBe("mixed");
  });

  test("gradual_accumulation allows at most a quarter in one 15-minute window", () => {
    const base = { count: 8, firstAt: at(0), lastAt: at(48), distinctHours: 6 };
    expect(detectPattern(shape({ ...base, maxIn15Minutes: 2 })).pattern).toBe(
      "gradual_accumulation",
    );
    expect(detectPattern(shape({ ...base, maxIn15Minutes: 3 })).pattern).toBe("mixed");
  });

  test("every suggested action is a non-empty sentence", () => {
    for (const p of PATTERNS) expect(p.suggestedAction).toMatch(/^[A-Z].{30,}\.$/);
  });
});

describe("postback endpoints", () => {
  test("missing_field: most deaths sent nothing for lack of a templated field; it comes before every other pattern", () => {
    const p = detectPattern(
      shape({ count: 12, missingField: 7, maxIn15Minutes: 12, credentials: 5 }),
    );
    expect(p.pattern).toBe("missing_field");
    expect(p.suggestedAction).toMatch(/missingFields/);
  });

  test("body_rule: most deaths were 2xx answers whose body broke the success rule", () => {
    const p = detectPattern(shape({ count: 4, bodyRule: 2 }));
    expect(p.pattern).toBe("body_rule");
    expect(p.suggestedAction).toMatch(/successRule/);
    expect(detectPattern(shape({ count: 4, bodyRule: 1 })).pattern).toBe("mixed");
  });
});
