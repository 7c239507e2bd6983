/** Small statistics helpers: medians of runs, percentiles of samples, rates. */

export function median(values: readonly number[]): number {
  const finite = values.filter((v) => Number.isFinite(v));
  if (finite.length === 0) return Number.NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

/** Events per second from `count` events between the first and the last timestamp (ms). */
export function ratePerSecond(count: number, firstMs: number, lastMs: number): number {
  if (count < 2 || !(lastMs > firstMs)) return Number.NaN;
  // count events span count - 1 intervals.
  return ((count - 1) * 1000) / (lastMs - firstMs);
}

export const ratio = (a: number, b: number): number => (b > 0 ? a / b : Number.NaN);

/** Epoch milliseconds with sub-millisecond resolution, comparable across local processes. */
export const nowMs = (): number => performance.timeOrigin + performance.now();

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` until true; false when `timeoutMs` passed first. */
export async function waitUntil(
  check: () => Promise<boolean> | boolean,
  timeoutMs: number,
  everyMs = 50,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}
