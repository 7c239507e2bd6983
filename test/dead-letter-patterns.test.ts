/**
 * Dead-letter analysis read from generated histories (GET /dead-letters/analysis): for each
 * pattern an endpoint whose deliveries died the way the pattern describes, and near misses
 * that must not match it. Rows are seeded with chosen times of death, statuses and error
 * kinds (test/helpers/seeded-deliveries.ts): nothing sleeps. Delivered rows sit among the
 * dead where a real history would have them; the analysis reads only the dead.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { MIXED, PATTERNS } from "../src/ops/dead-letter-patterns.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import {
  ago,
  DAY,
  died,
  HOUR,
  MIN,
  newApp,
  newEndpoint,
  type SeedRow,
  seed,
  V1,
} from "./helpers/seeded-deliveries.ts";

let h: Harness;
let app: string;

beforeAll(async () => {
  h = await startHarness();
  app = await newApp(h);
});
afterAll(async () => {
  await h?.close();
});

type Answer = Parameters<typeof died>[2];

/** A delivered row at `at`: part of the history, never part of the analysis. */
const delivered = (endpointId: string, at: Date): SeedRow => ({
  endpointId,
  status: "delivered",
  createdAt: new Date(at.getTime() - MIN),
  updatedAt: at,
  code: 200,
  attempts: 1,
});

/** The analysis of one endpoint whose history `history(endpointId)` generates. */
async function analysisOf(history: (ep: string) => SeedRow[]) {
  const ep = await newEndpoint(h, app);
  await seed(h.db.pool, history(ep.id));
  const res = await h.call("GET", `${V1}/dead-letters/analysis?endpoint_id=${ep.id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body.data).toHaveLength(1);
  return res.body.data[0] as { pattern: string; suggestedAction: string; deadCount: number };
}

/** Deaths `answers[i]` at `start + i * stepMs`. */
const deaths = (ep: string, start: Date, stepMs: number, answers: Answer[]) =>
  answers.map((a, i) => died(ep, new Date(start.getTime() + i * stepMs), a, 5));

const n = <T>(count: number, x: T): T[] => Array.from({ length: count }, () => x);

/** A dead letter of a postback endpoint, by its error kind (no status: nothing sent, or a 2xx refused). */
const diedOfKind = (
  endpointId: string,
  at: Date,
  kind: "missing_field" | "body_rule" | "proxy" | "tls",
): SeedRow => ({
  endpointId,
  status: "dead_letter",
  createdAt: new Date(at.getTime() - MIN),
  updatedAt: at,
  code: kind === "body_rule" ? 200 : null,
  kind,
  error: kind,
  attempts: 1,
});

const cases: Record<string, { pattern: string; history: (ep: string) => SeedRow[] }> = {
  // ---- postback endpoints
  "payloads without the templated field": {
    pattern: "missing_field",
    history: (ep) => [0, 1, 2].map((i) => diedOfKind(ep, ago((i + 1) * MIN), "missing_field")),
  },
  "2xx answers refused by the success rule": {
    pattern: "body_rule",
    history: (ep) => [
      ...[0, 1].map((i) => diedOfKind(ep, ago((i + 1) * MIN), "body_rule")),
      died(ep, ago(5 * MIN), 500),
    ],
  },
  "near miss: one refused body of three": {
    pattern: "mixed",
    history: (ep) => [
      diedOfKind(ep, ago(MIN), "body_rule"),
      ...deaths(ep, ago(HOUR), 5 * MIN, [500, 502]),
    ],
  },
  // ---- egress (docs/egress.md)
  "the egress proxy down for most of them": {
    pattern: "proxy",
    history: (ep) => [
      ...[0, 1].map((i) => diedOfKind(ep, ago((i + 1) * MIN), "proxy")),
      died(ep, ago(5 * MIN), 500),
    ],
  },
  "TLS handshakes failing": {
    pattern: "tls",
    history: (ep) => [0, 1, 2].map((i) => diedOfKind(ep, ago((i + 1) * MIN), "tls")),
  },
  // ---- gone
  "410 Gone to every delivery": {
    pattern: "gone",
    history: (ep) => deaths(ep, ago(30 * MIN), MIN, n(3, 410 as Answer)),
  },
  "500s all morning, then the receiver answered 410 (the newest death)": {
    pattern: "gone",
    history: (ep) => [
      ...deaths(ep, ago(5 * HOUR), 20 * MIN, n(6, 500 as Answer)),
      died(ep, ago(MIN), 410),
    ],
  },
  "near miss: one 410 long ago among later 500s": {
    pattern: "mixed",
    history: (ep) => [
      died(ep, ago(2 * HOUR), 410),
      ...deaths(ep, ago(HOUR), 10 * MIN, n(3, 500 as Answer)),
    ],
  },
  // ---- timeouts
  "a run of timeouts": {
    pattern: "timeouts",
    history: (ep) => deaths(ep, ago(2 * HOUR), 5 * MIN, n(12, "timeout" as Answer)),
  },
  "timeouts all day (they name the cause before the spread does)": {
    pattern: "timeouts",
    history: (ep) => deaths(ep, ago(10 * HOUR), HOUR, n(10, "timeout" as Answer)),
  },
  "near miss: two timeouts of five": {
    pattern: "mixed",
    history: (ep) =>
      deaths(ep, ago(2 * HOUR), 20 * MIN, ["timeout", "timeout", 500, 502, "connection"]),
  },
  // ---- credentials
  "401 and 403": {
    pattern: "credentials",
    history: (ep) => deaths(ep, ago(HOUR), 10 * MIN, [401, 401, 403, 500]),
  },
  "near miss: two 401s of five": {
    pattern: "mixed",
    history: (ep) => deaths(ep, ago(HOUR), 10 * MIN, [401, 401, 500, 500, 502]),
  },
  // ---- rate limited
  "429s": {
    pattern: "rate_limited",
    history: (ep) => deaths(ep, ago(HOUR), 10 * MIN, [429, 429, 429, 500]),
  },
  "near miss: two 429s of five": {
    pattern: "mixed",
    history: (ep) => deaths(ep, ago(HOUR), 10 * MIN, [429, 429, 500, 500, 502]),
  },
  // ---- outage
  "a burst: ten refused connections within ten minutes, two stragglers on other days": {
    pattern: "outage",
    history: (ep) => [
      ...deaths(ep, ago(3 * HOUR), MIN, [...n(5, "connection" as Answer), ...n(5, 502 as Answer)]),
      died(ep, ago(DAY), 500),
      died(ep, ago(2 * DAY), 500),
      ...Array.from({ length: 20 }, (_, i) => delivered(ep, ago(6 * HOUR - i * 10 * MIN))),
    ],
  },
  "near miss: four in a burst is too few to call an outage": {
    pattern: "mixed",
    history: (ep) => deaths(ep, ago(HOUR), MIN, n(4, 502 as Answer)),
  },
  "near miss: five deaths of a whole day, three of them in one quarter-hour by chance": {
    pattern: "mixed",
    history: (ep) => [
      ...deaths(ep, ago(2 * HOUR), 4 * MIN, n(3, 500 as Answer)),
      died(ep, ago(9 * HOUR), 500),
      died(ep, ago(12 * HOUR), 500),
    ],
  },
  "near miss: half the deaths in the burst window (two bursts) is no single outage": {
    pattern: "mixed",
    history: (ep) => [
      ...deaths(ep, ago(5 * HOUR), MIN, n(5, 502 as Answer)),
      ...deaths(ep, ago(HOUR), MIN, n(5, 502 as Answer)),
    ],
  },
  // ---- intermittent
  "one attempt in three fails, all day (a delivery every 10 minutes for 10 hours)": {
    pattern: "intermittent",
    history: (ep) =>
      Array.from({ length: 60 }, (_, i) => {
        const at = ago(10 * HOUR - i * 10 * MIN);
        return i % 3 === 2 ? died(ep, at, i % 2 ? 500 : 503, 5) : delivered(ep, at);
      }),
  },
  "a few a day, spread over four days": {
    pattern: "intermittent",
    history: (ep) =>
      [0, 1, 2, 3].flatMap((day) =>
        [2, 9, 17].map((hour) => died(ep, ago(day * DAY + hour * HOUR + 7 * MIN), 400, 1)),
      ),
  },
  "near miss: spread, but over under three hours": {
    pattern: "mixed",
    history: (ep) => deaths(ep, ago(170 * MIN), 20 * MIN, n(8, 500 as Answer)),
  },
  "near miss: spread over hours, but a third of them in one quarter-hour": {
    pattern: "mixed",
    history: (ep) => [
      ...deaths(ep, ago(8 * HOUR), 2 * HOUR, n(4, 500 as Answer)),
      ...deaths(ep, ago(HOUR), MIN, n(3, 500 as Answer)),
      died(ep, ago(30 * MIN), 500),
      died(ep, ago(10 * MIN), 500),
    ],
  },
  // ---- mixed
  "nothing stands out: one of each within two hours": {
    pattern: "mixed",
    history: (ep) => deaths(ep, ago(2 * HOUR), 25 * MIN, [500, 401, 429, "timeout", 502]),
  },
};

for (const [name, { pattern, history }] of Object.entries(cases)) {
  test(`${pattern}: ${name}`, async () => {
    const a = await analysisOf(history);
    expect(a.pattern).toBe(pattern);
    const rule = [...PATTERNS, MIXED].find((p) => p.pattern === pattern)!;
    expect(a.suggestedAction).toBe(rule.suggestedAction);
  });
}

test("every pattern has a generated history that reads as it, and a near miss that does not", () => {
  const named = Object.values(cases).map((c) => c.pattern);
  for (const p of PATTERNS) expect(named, p.pattern).toContain(p.pattern);
  expect(Object.keys(cases).filter((k) => k.startsWith("near miss")).length).toBeGreaterThan(8);
});
