/**
 * Reads the Prometheus text format that /metrics answers (version 0.0.4): one sample per
 * line, `name{label="value",...} value`, comments and blank lines skipped. And the
 * quantile of a histogram from its cumulative buckets, as PromQL's histogram_quantile
 * estimates it: linear within the bucket the rank falls in.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

const labelValue = (v: string) => v.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));

const number = (v: string) =>
  v === "+Inf" ? Number.POSITIVE_INFINITY : v === "-Inf" ? Number.NEGATIVE_INFINITY : Number(v);

/** Every sample of the text; a line that is not one is skipped. */
export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const m = LINE.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(LABEL)) labels[l[1]!] = labelValue(l[2]!);
    out.push({ name: m[1]!, labels, value: number(m[3]!) });
  }
  return out;
}

/** A histogram's cumulative buckets: upper bound (le) and count, ascending. */
export interface Buckets {
  bounds: { le: number; count: number }[];
  sum: number;
  count: number;
}

/**
 * The `q` quantile (0..1) of the buckets, or null with no observations. Past the last
 * finite bound the answer is that bound (Prometheus does the same).
 */
export function quantile(q: number, b: Buckets): number | null {
  const total = b.bounds.at(-1)?.count ?? 0;
  if (total === 0) return null;
  const rank = q * total;
  let lower = 0;
  let below = 0;
  for (const { le, count } of b.bounds) {
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return lower;
      const inBucket = count - below;
      return inBucket === 0 ? le : lower + ((le - lower) * (rank - below)) / inBucket;
    }
    lower = le;
    below = count;
  }
  return lower;
}

/**
 * The buckets of histogram `name`, summed over the samples whose labels `keyOf` maps to the
 * same key (e.g. per endpoint, or "" for all together).
 */
export function histograms(
  samples: readonly Sample[],
  name: string,
  keyOf: (labels: Record<string, string>) => string,
): Map<string, Buckets> {
  const out = new Map<string, Buckets>();
  const of = (key: string) => {
    const found = out.get(key);
    if (found) return found;
    const b: Buckets = { bounds: [], sum: 0, count: 0 };
    out.set(key, b);
    return b;
  };
  for (const s of samples) {
    if (s.name === `${name}_bucket` && s.labels.le !== undefined) {
      const b = of(keyOf(s.labels));
      const le = number(s.labels.le);
      const at = b.bounds.find((x) => x.le === le);
      if (at) at.count += s.value;
      else b.bounds.push({ le, count: s.value });
    } else if (s.name === `${name}_sum`) of(keyOf(s.labels)).sum += s.value;
    else if (s.name === `${name}_count`) of(keyOf(s.labels)).count += s.value;
  }
  for (const b of out.values()) b.bounds.sort((x, y) => x.le - y.le);
  return out;
}
