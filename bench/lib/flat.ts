/**
 * Scenario 20's rule for "flat once the window is full", printed with its verdicts. The
 * samples are split in halves: the throughput is flat when the second half's mean is within
 * 10% of the first half's and at least 90% of the offered rate; a quantity that could grow
 * (RSS, table sizes, dead tuples) is flat when the second half's highest value is at most
 * 10% above the first half's highest (plus a small floor for near-zero values), so a
 * sawtooth (a partition filling, then dropped) is flat and a steady climb is not. Dead
 * tuples peak higher as this hour's period fills (autovacuum waits for a share of a
 * table's rows), so whether autovacuum keeps up is judged by the dead tuples past its
 * trigger, which may not grow by more than two minutes of the offered deliveries.
 */

export interface Flatness {
  what: string;
  firstHalf: number;
  secondHalf: number;
  flat: boolean;
  rule: string;
}

const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / Math.max(1, v.length);
const max = (v: number[]) => v.reduce((a, b) => Math.max(a, b), Number.NEGATIVE_INFINITY);

type Series<T> = { [K in keyof T]: T[K] extends number ? K : never }[keyof T];

export function flatness<T extends object>(samples: T[], offeredRate: number): Flatness[] {
  const half = Math.floor(samples.length / 2);
  const a = samples.slice(0, half);
  const b = samples.slice(half);
  const col = (rows: T[], key: Series<T>) => rows.map((r) => r[key] as number);
  const out: Flatness[] = [];
  const rate = "deliveredPerSecond" as Series<T>;
  if (a.length > 0 && b.length > 0) {
    const x = mean(col(a, rate));
    const y = mean(col(b, rate));
    out.push({
      what: "deliveries/s",
      firstHalf: x,
      secondHalf: y,
      flat: Math.abs(y - x) <= 0.1 * x && y >= 0.9 * offeredRate,
      rule: "means within 10%, >= 90% of offered",
    });
  }
  const growing: [string, string, number][] = [
    ["worker RSS MiB", "workerRssMiB", 5],
    ["API RSS MiB", "apiRssMiB", 5],
    ["history tables MiB", "historyMiB", 1],
    ["attempts MiB", "attemptsMiB", 1],
    ["dead tuples", "deadTuples", 1_000],
  ];
  for (const [what, key, floor] of growing) {
    if (a.length === 0 || b.length === 0) break;
    const x = max(col(a, key as Series<T>));
    const y = max(col(b, key as Series<T>));
    out.push({
      what,
      firstHalf: x,
      secondHalf: y,
      flat: y <= 1.1 * x + floor,
      rule: `2nd half max <= 1.1 x 1st half max + ${floor}`,
    });
  }
  // autovacuum checks every naptime (60 s by default) and then takes a while: dead tuples
  // past the trigger up to two minutes of the offered deliveries are a table waiting its
  // turn, not autovacuum falling behind
  const key = "deadPastTrigger" as Series<T>;
  if (a.length > 0 && b.length > 0 && key in samples[0]!) {
    const x = max(col(a, key));
    const y = max(col(b, key));
    const floor = 120 * offeredRate;
    out.push({
      what: "dead tuples past autovacuum's trigger",
      firstHalf: x,
      secondHalf: y,
      flat: y <= 1.1 * x + floor,
      rule: `2nd half max <= 1.1 x 1st half max + ${floor} (2 minutes of the offered rate)`,
    });
  }
  return out;
}
