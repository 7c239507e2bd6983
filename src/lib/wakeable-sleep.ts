/** A sleep that `wake()` or an AbortSignal cuts short (pg-boss style). */
export interface WakeableSleep {
  sleep(ms: number): Promise<void>;
  wake(): void;
}

export function makeWakeableSleep(): WakeableSleep {
  let pending: (() => void) | null = null;
  let woken = false;
  return {
    sleep(ms) {
      if (woken) {
        woken = false;
        return Promise.resolve();
      }
      return new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          pending = null;
          woken = false;
          resolve();
        }
        pending = done;
      });
    },
    wake() {
      if (pending) pending();
      else woken = true;
    },
  };
}
