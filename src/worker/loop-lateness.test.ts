import { afterEach, describe, expect, test, vi } from "vitest";
import { startLoopLateness } from "./loop-lateness.ts";

describe("the event loop's lateness", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  test("sums how late each tick fired, placed in time: a window counts what fell in it", () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let clock = 0;
    const meter = startLoopLateness({ intervalMs: 10, jitterMs: 1, now: () => clock });
    const tickAt = (t: number) => {
      clock = t;
      vi.advanceTimersToNextTimer();
    };
    tickAt(10); // on time
    tickAt(70); // 50 ms late: 49 counted (1 ms is a timer's granularity)
    tickAt(80); // on time
    expect(meter.within(10)).toBe(0);
    // from 50: the late tick's stretch (20-70) ends in the window, 20 ms of it in it
    expect(meter.within(30)).toBe(20);
    expect(meter.within(80)).toBe(49);
    // a window reaching back past the first tick counts no more
    expect(meter.within(1_000)).toBe(49);
    // the loop away now, no tick yet: what is already late counts
    clock = 200; // 120 ms since the last tick: 109 late
    expect(meter.within(50)).toBe(50);
    expect(meter.within(200)).toBe(49 + 109);
    meter.stop();
  });

  test("an attempt's own share: the loop's lateness meanwhile, at most three of its longest late stretches", () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let clock = 0;
    const meter = startLoopLateness({ intervalMs: 10, jitterMs: 1, now: () => clock });
    const tickAt = (t: number) => {
      clock = t;
      vi.advanceTimersToNextTimer();
    };
    // one long block: all of it is the worker's
    tickAt(10);
    tickAt(210); // 189 late
    tickAt(220);
    expect(meter.ownShare(250)).toBe(189);
    // a loop late in every turn (50 ms turns: 39 late each) for a 400 ms answer: its
    // request waited a few turns, not all eight
    for (let t = 270; t <= 620; t += 50) tickAt(t);
    expect(meter.within(400)).toBe(8 * 39);
    expect(meter.ownShare(400)).toBe(3 * 39);
    meter.stop();
  });

  test("keeps keepMs of ticks: older lateness falls out of every window", () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    let clock = 0;
    const meter = startLoopLateness({ intervalMs: 10, jitterMs: 1, keepMs: 100, now: () => clock });
    const tickAt = (t: number) => {
      clock = t;
      vi.advanceTimersToNextTimer();
    };
    tickAt(500); // 489 late
    for (let t = 510; t <= 700; t += 10) tickAt(t);
    expect(meter.within(10_000)).toBe(0);
    meter.stop();
  });

  test("a loop blocked on purpose is late by about as long as it was blocked", async () => {
    const meter = startLoopLateness();
    // let the timer tick once on an idle loop, then block the loop for 200 ms
    await new Promise((r) => setTimeout(r, 30));
    const until = performance.now() + 200;
    while (performance.now() < until) {
      // busy
    }
    // (no timing upper bound: a loaded machine makes the loop late on its own)
    expect(meter.within(1_000)).toBeGreaterThanOrEqual(200 - 10 - 1);
    expect(meter.within(1_000)).toBeLessThanOrEqual(1_000);
    meter.stop();
  });
});
