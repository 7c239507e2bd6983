import { describe, expect, test } from "vitest";
import { histograms, parsePrometheusText, quantile } from "./prometheus-text.ts";

const TEXT = `# HELP h latency
# TYPE h histogram
h_bucket{le="0.1",endpoint="a"} 2
h_bucket{le="0.5",endpoint="a"} 6
h_bucket{le="+Inf",endpoint="a"} 8
h_sum{endpoint="a"} 2.4
h_count{endpoint="a"} 8
h_bucket{le="0.1",endpoint="b \\"quoted\\""} 0
h_bucket{le="0.5",endpoint="b \\"quoted\\""} 2
h_bucket{le="+Inf",endpoint="b \\"quoted\\""} 2
h_sum{endpoint="b \\"quoted\\""} 0.6
h_count{endpoint="b \\"quoted\\""} 2
up 1
not a sample line
`;

describe("the Prometheus text format", () => {
  test("samples with their labels, escapes read", () => {
    const s = parsePrometheusText(TEXT);
    expect(s).toHaveLength(11);
    expect(s.at(-1)).toEqual({ name: "up", labels: {}, value: 1 });
    expect(s[5]!.labels).toEqual({ le: "0.1", endpoint: 'b "quoted"' });
    expect(s[2]).toEqual({ name: "h_bucket", labels: { le: "+Inf", endpoint: "a" }, value: 8 });
  });

  test("quantiles as histogram_quantile estimates them, per key and together", () => {
    const s = parsePrometheusText(TEXT);
    const a = histograms(s, "h", (l) => l.endpoint ?? "").get("a")!;
    expect(a.count).toBe(8);
    // rank 4 of 8: inside (0.1, 0.5], 2 of its 4 observations in: 0.1 + 0.4 * 2/4
    expect(quantile(0.5, a)).toBeCloseTo(0.3);
    // rank 7.6 is past the last finite bound: that bound
    expect(quantile(0.95, a)).toBe(0.5);
    const all = histograms(s, "h", () => "").get("")!;
    expect(all.count).toBe(10);
    expect(all.bounds.map((b) => b.count)).toEqual([2, 8, 10]);
    expect(quantile(0.5, { bounds: [], sum: 0, count: 0 })).toBeNull();
  });
});
