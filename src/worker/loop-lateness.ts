/**
 * The worker's own lateness (docs/adaptive-concurrency.md, "The worker's own saturation"):
 * how long this process's event loop was late, kept as a running sum over time, so that
 * the part of one request's measured latency that was the worker's own doing can be read
 * back: `within(ms)`, the loop's lateness in the last `ms` milliseconds.
 *
 * An answer that has arrived is read only when the loop comes round to it; while the loop
 * is busy (a long batch of callbacks, a blocked loop) or the process does not get a core
 * (a saturated machine), the answer waits, and the time it waits is counted in its latency
 * although the receiver did nothing. A timer measures that: it is due every `intervalMs`
 * and fires only when the loop comes round, so how late it fired is how long the loop was
 * away (as perf_hooks.monitorEventLoopDelay measures it; sampled here by a timer of our
 * own so that each late stretch is placed in time, not only counted in a histogram).
 * Lateness up to `jitterMs` per tick is a timer's ordinary granularity and not counted.
 *
 * Cost: one timer callback every `intervalMs` (10 ms: 100 a second, a few µs each) and two
 * numbers per tick kept for `keepMs`. The timer is unref'd: it keeps no process alive.
 */

/**
 * How many of the loop's turns one attempt waits for on the worker's side: the turn that
 * writes its request, the one that reads its answer and the one that completes it.
 */
export const TURNS_PER_ATTEMPT = 3;

export interface LoopLateness {
  /**
   * The worker's own share of a latency of `ms` that has just ended: how late the event loop
   * was in those last `ms` milliseconds, but at most TURNS_PER_ATTEMPT times its longest late
   * stretch among them. An answer waits for the loop only when it arrives and when its
   * request goes out, not for every late turn while the receiver works: on a loop that is
   * late in every turn, the whole of a slow receiver's time would otherwise count as ours.
   */
  ownShare(ms: number): number;
  /** ms the event loop was late in the last `ms` milliseconds (up to now), all of it */
  within(ms: number): number;
  stop(): void;
}

export interface LoopLatenessOptions {
  /** the timer's period (default 10 ms) */
  intervalMs?: number;
  /** how far back a window can look (default 60 s: past the longest request timeout) */
  keepMs?: number;
  /** lateness per tick below this is a timer's ordinary granularity (default 1 ms) */
  jitterMs?: number;
  /** monotonic clock in ms (default performance.now) */
  now?: () => number;
}

export function startLoopLateness(options: LoopLatenessOptions = {}): LoopLateness {
  const intervalMs = options.intervalMs ?? 10;
  const jitterMs = options.jitterMs ?? 1;
  const now = options.now ?? (() => performance.now());
  // a ring of ticks: each tick's time and how late it fired (ticks come at least
  // intervalMs apart, so keepMs / intervalMs of them cover keepMs)
  const size = Math.ceil((options.keepMs ?? 60_000) / intervalMs) + 1;
  const at = new Float64Array(size);
  const lateAt = new Float64Array(size);
  let head = 0; // index of the newest tick
  let count = 1;
  at[0] = now();

  /** lateness of the stretch since the tick at `t`, if the timer were to fire at `time` */
  const lateSince = (t: number, time: number) => Math.max(0, time - t - intervalMs - jitterMs);

  const timer = setInterval(() => {
    const t = now();
    const late = lateSince(at[head]!, t);
    head = (head + 1) % size;
    at[head] = t;
    lateAt[head] = late;
    if (count < size) count++;
  }, intervalMs);
  timer.unref();

  /** the lateness in the last `ms` ms: its sum and its longest stretch */
  function window(ms: number): { total: number; longest: number } {
    const t = now();
    const from = t - ms;
    // the stretch since the newest tick counts as far as it is late already
    const pending = Math.max(0, Math.min(lateSince(at[head]!, t), t - Math.max(from, at[head]!)));
    let total = pending;
    let longest = pending;
    // back over the ticks after `from`: each tick's lateness is the tail of its stretch
    // (the timer fired that late), so a tick whose stretch began before `from` counts only
    // the part of its lateness after `from`; the oldest kept tick has no stretch known
    let i = head;
    for (let k = 1; k < count && at[i]! > from; k++) {
      const late = Math.min(lateAt[i]!, at[i]! - from);
      total += late;
      if (late > longest) longest = late;
      i = (i - 1 + size) % size;
    }
    return { total: Math.min(total, ms), longest: Math.min(longest, ms) };
  }

  return {
    ownShare(ms) {
      const w = window(ms);
      return Math.min(w.total, TURNS_PER_ATTEMPT * w.longest);
    },
    within(ms) {
      return window(ms).total;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
