/**
 * detectPattern as a pure function: one fixture per pattern, the order of the table (first
 * match wins), and the thresholds at their edges.
 */
import { describe, expect, test } from "vitest";
import {
  type DeadLetterShape,
  detectPattern,
  MIXED,
  PATTERN_NAMES,
  PATTERNS,
} from "./dead-letter-patterns.ts";

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
    // two hours: too short to call "spread out"
    firstAt: at(0),
    lastAt: at(2),
    distinctHours: 3,
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

  test("proxy and tls: most deaths on the egress proxy, or in the TLS handshake", () => {
    expect(detectPattern(shape({ count: 4, proxy: 2 })).pattern).toBe("proxy");
    expect(detectPattern(shape({ count: 4, proxy: 1 })).pattern).toBe("mixed");
    const tls = detectPattern(shape({ count: 4, tls: 3 }));
    expect(tls.pattern).toBe("tls");
    expect(tls.suggestedAction).toMatch(/tlsCa/);
  });

  test("rate_limited: most deaths answered 429", () => {
    const p = detectPattern(shape({ count: 4, rateLimited: 3 }));
    expect(p.pattern).toBe("rate_limited");
    expect(p.suggestedAction).toMatch(/429/);
    expect(p.suggestedAction).toMatch(/ratePerSecond/);
  });

  test("outage: most deaths inside one 15-minute window", () => {
    // 12 dead: 10 within ten minutes, two stragglers on other days
    const p = detectPattern(
      shape({ count: 12, maxIn15Minutes: 10, firstAt: at(-48), lastAt: at(0), distinctHours: 3 }),
    );
    expect(p.pattern).toBe("outage");
    expect(p.suggestedAction).toMatch(/down/);
  });

  test("intermittent: a few a day, spread over days", () => {
    // 12 dead: three a day for four days, never two in the same 15 minutes
    const p = detectPattern(
      shape({ count: 12, maxIn15Minutes: 1, firstAt: at(-87), lastAt: at(-2), distinctHours: 12 }),
    );
    expect(p.pattern).toBe("intermittent");
    expect(p.suggestedAction).toMatch(/fails a share of requests/);
  });

  test("intermittent: one death every half hour over a working day", () => {
    const p = detectPattern(
      shape({ count: 20, maxIn15Minutes: 2, firstAt: at(0), lastAt: at(9.5), distinctHours: 10 }),
    );
    expect(p.pattern).toBe("intermittent");
  });

  test("gone: the receiver answered 410", () => {
    const p = detectPattern(shape({ count: 3, gone: 3, maxIn15Minutes: 3, distinctHours: 1 }));
    expect(p.pattern).toBe("gone");
    expect(p.suggestedAction).toMatch(/410 Gone/);
  });

  test("timeouts: a run of timeouts", () => {
    // eight timeouts within ten minutes: a burst, but the answers name the cause
    const p = detectPattern(shape({ count: 8, timeouts: 8, maxIn15Minutes: 8, distinctHours: 1 }));
    expect(p.pattern).toBe("timeouts");
    expect(p.suggestedAction).toMatch(/timeoutMs/);
  });

  test("mixed: nothing stands out", () => {
    // one 500, one 401, one 429, one timeout within two hours
    const p = detectPattern(
      shape({ count: 4, credentials: 1, rateLimited: 1, timeouts: 1, maxIn15Minutes: 1 }),
    );
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
  test("the table order: what the answers name for certain, then what the times of death say, mixed last", () => {
    expect(PATTERNS.map((p) => p.pattern)).toEqual([
      "missing_field",
      "body_rule",
      "proxy",
      "tls",
      "gone",
      "credentials",
      "rate_limited",
      "timeouts",
      "outage",
      "intermittent",
    ]);
    expect([...PATTERNS, MIXED].map((p) => p.pattern)).toEqual(PATTERN_NAMES);
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

  test("outage needs at least 5 deaths inside the window", () => {
    expect(detectPattern(shape({ count: 4, maxIn15Minutes: 4, distinctHours: 1 })).pattern).toBe(
      "mixed",
    );
    expect(detectPattern(shape({ count: 5, maxIn15Minutes: 5, distinctHours: 1 })).pattern).toBe(
      "outage",
    );
    // Regression: three of five deaths of a whole day falling within 15 minutes by chance
    // (60%) were an "outage cluster"; a burst now takes at least five deaths
    expect(
      detectPattern(shape({ count: 5, maxIn15Minutes: 3, firstAt: at(0), lastAt: at(10) })).pattern,
    ).toBe("mixed");
  });

  test("outage needs 60% in the window", () => {
    expect(detectPattern(shape({ count: 10, maxIn15Minutes: 6 })).pattern).toBe("outage");
    expect(detectPattern(shape({ count: 10, maxIn15Minutes: 5 })).pattern).toBe("mixed");
  });

  test("intermittent needs a span of at least 3 hours", () => {
    const base = { count: 8, maxIn15Minutes: 2, distinctHours: 4, firstAt: at(0) };
    expect(detectPattern(shape({ ...base, lastAt: at(3) })).pattern).toBe("intermittent");
    expect(detectPattern(shape({ ...base, lastAt: new Date(at(3).getTime() - 1) })).pattern).toBe(
      "mixed",
    );
  });

  test("intermittent needs at least 3 distinct hours", () => {
    const base = { count: 8, maxIn15Minutes: 2, firstAt: at(0), lastAt: at(48) };
    expect(detectPattern(shape({ ...base, distinctHours: 3 })).pattern).toBe("intermittent");
    expect(detectPattern(shape({ ...base, distinctHours: 2 })).pattern).toBe("mixed");
  });

  test("intermittent allows at most a quarter in one 15-minute window", () => {
    const base = { count: 8, firstAt: at(0), lastAt: at(48), distinctHours: 6 };
    expect(detectPattern(shape({ ...base, maxIn15Minutes: 2 })).pattern).toBe("intermittent");
    expect(detectPattern(shape({ ...base, maxIn15Minutes: 3 })).pattern).toBe("mixed");
  });

  test("gone at exactly half, or when the newest death was a 410; neither: not gone", () => {
    expect(detectPattern(shape({ count: 6, gone: 3 })).pattern).toBe("gone");
    expect(detectPattern(shape({ count: 7, gone: 3 })).pattern).toBe("mixed");
    expect(detectPattern(shape({ count: 7, gone: 1, lastGone: true })).pattern).toBe("gone");
    expect(detectPattern(shape({ count: 7, gone: 1, lastGone: false })).pattern).toBe("mixed");
  });

  test("timeouts at exactly half matches, just under does not", () => {
    expect(detectPattern(shape({ count: 6, timeouts: 3 })).pattern).toBe("timeouts");
    expect(detectPattern(shape({ count: 7, timeouts: 3 })).pattern).toBe("mixed");
  });

  test("every suggested action is a non-empty sentence", () => {
    for (const p of [...PATTERNS, MIXED]) expect(p.suggestedAction).toMatch(/^[A-Z].{30,}\.$/);
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
