/**
 * Which broker connections are in use (the broker transports keep one per endpoint:
 * delivery/amqp/, delivery/nats/): one no publish has used for `idleCloseMs`, with none
 * running on it, is closed, so endpoints deleted, disabled, changed or gone quiet do not
 * hold connections until the worker stops. A sweep runs every min(idleCloseMs, 60 s),
 * on a timer that keeps no process alive.
 */
import { performance } from "node:perf_hooks";

export interface LinkUse {
  /** a publish to this endpoint's connection starts */
  begin(endpointId: string): void;
  /** ... and ended */
  end(endpointId: string): void;
  stop(): void;
}

export function makeLinkUse(idleCloseMs: number, closeIdle: (endpointId: string) => void): LinkUse {
  const running = new Map<string, number>();
  const lastUsed = new Map<string, number>();
  const timer = setInterval(
    () => {
      const now = performance.now();
      for (const [id, at] of lastUsed) {
        if (!running.has(id) && now - at >= idleCloseMs) {
          lastUsed.delete(id);
          closeIdle(id);
        }
      }
    },
    Math.max(10, Math.min(idleCloseMs, 60_000)),
  );
  timer.unref();
  return {
    // (a running publish keeps its link whatever its last use: only its end is noted)
    begin(id) {
      running.set(id, (running.get(id) ?? 0) + 1);
    },
    end(id) {
      const left = (running.get(id) ?? 1) - 1;
      if (left > 0) running.set(id, left);
      else running.delete(id);
      lastUsed.set(id, performance.now());
    },
    stop: () => clearInterval(timer),
  };
}
