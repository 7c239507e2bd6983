import { describe, expect, test } from "vitest";
import { isWorthRetryingWhole, UnwrittenRowsError, writeIsolating } from "./write-isolating.ts";

const refused = () => Object.assign(new Error("invalid byte sequence"), { code: "22021" });
const unreachable = () => Object.assign(new Error("terminating connection"), { code: "57P01" });

/** A fake table: a statement fails whole when it holds a poisoned row. */
function table(poison: (row: number) => boolean) {
  const stored: number[] = [];
  const statements: number[][] = [];
  return {
    stored,
    statements,
    async write(rows: number[]) {
      statements.push(rows);
      if (rows.some(poison)) throw refused();
      stored.push(...rows);
    },
  };
}

describe("writeIsolating", () => {
  test("a clean batch is one statement", async () => {
    const t = table(() => false);
    const failed: number[] = [];
    const n = await writeIsolating([1, 2, 3], t.write, async (r) => {
      failed.push(r);
    });
    expect(n).toBe(1);
    expect(t.stored).toEqual([1, 2, 3]);
    expect(failed).toEqual([]);
  });

  test("one poisoned row among 1,000: every other row is written once, in order, in a few statements", async () => {
    const rows = Array.from({ length: 1000 }, (_, i) => i);
    const t = table((r) => r === 617);
    const failed: Array<[number, unknown]> = [];
    const n = await writeIsolating(rows, t.write, async (r, err) => {
      failed.push([r, err]);
    });
    expect(t.stored).toEqual(rows.filter((r) => r !== 617));
    expect(failed.map(([r]) => r)).toEqual([617]);
    expect((failed[0]![1] as { code: string }).code).toBe("22021");
    // 1 + 2 per halving (10 halvings for 1,000 rows)
    expect(n).toBeLessThanOrEqual(1 + 2 * Math.ceil(Math.log2(1000)));
  });

  test("several poisoned rows are each isolated; an empty batch writes nothing", async () => {
    const rows = Array.from({ length: 64 }, (_, i) => i);
    const bad = new Set([0, 5, 6, 63]);
    const t = table((r) => bad.has(r));
    const failed: number[] = [];
    await writeIsolating(rows, t.write, async (r) => {
      failed.push(r);
    });
    expect(failed).toEqual([0, 5, 6, 63]);
    expect(t.stored).toEqual(rows.filter((r) => !bad.has(r)));
    expect(await writeIsolating([], t.write, async () => {})).toBe(0);
  });

  test("an unreachable database throws back exactly the rows not yet written", async () => {
    const stored: number[] = [];
    let calls = 0;
    const write = async (rows: number[]) => {
      calls++;
      if (calls === 1) throw refused(); // split: [1,2] and [3,4]
      if (calls === 3) throw unreachable(); // while writing [3,4]
      stored.push(...rows);
    };
    const err = await writeIsolating([1, 2, 3, 4], write, async () => {}).catch((e) => e);
    expect(err).toBeInstanceOf(UnwrittenRowsError);
    expect((err as UnwrittenRowsError<number>).rows).toEqual([3, 4]);
    expect(stored).toEqual([1, 2]);
    expect(isWorthRetryingWhole(err)).toBe(true);
  });

  test("a race (deadlock) is retried whole, not split", async () => {
    let calls = 0;
    const write = async () => {
      calls++;
      throw Object.assign(new Error("deadlock detected"), { code: "40P01" });
    };
    const err = await writeIsolating([1, 2, 3], write, async () => {}).catch((e) => e);
    expect((err as UnwrittenRowsError<number>).rows).toEqual([1, 2, 3]);
    expect(calls).toBe(1);
  });

  test("onRowFailed failing on an unreachable database puts its row back with the rest", async () => {
    const t = table((r) => r === 1);
    const err = await writeIsolating([1, 2], t.write, async () => {
      throw unreachable();
    }).catch((e) => e);
    expect((err as UnwrittenRowsError<number>).rows).toEqual([1, 2]);
    expect(t.stored).toEqual([]);
  });
});
