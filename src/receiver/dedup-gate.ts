/**
 * The middlewares' use of a DedupStore. A message is marked seen only after its handler
 * answered 2xx, so a handler that fails leaves it unseen and the sender's retry runs it
 * again. A copy that arrives while the first is still being handled in this process waits
 * for it, then is acknowledged as a duplicate (or handled, if the first failed).
 *
 *   enter(id): seen ──▶ "duplicate" (answer 200, skip the handler)
 *              in flight here ──▶ wait for it, then decide again
 *              otherwise ──▶ a ticket; ticket.leave(ok) marks seen when ok
 */
import type { DedupStore } from "./dedup-store.ts";

export interface DedupTicket {
  /** Ends the handling: marks the id seen when `handled` is true, and wakes waiting copies. */
  leave(handled: boolean): Promise<void>;
}

export interface DedupGate {
  enter(id: string): Promise<DedupTicket | "duplicate">;
}

export function makeDedupGate(store: DedupStore): DedupGate {
  const inFlight = new Map<string, Promise<void>>();
  return {
    async enter(id) {
      for (;;) {
        const running = inFlight.get(id);
        if (running) {
          await running;
          continue;
        }
        if (await store.seen(id)) return "duplicate";
        if (inFlight.has(id)) continue; // another copy got in while the store answered
        let done!: () => void;
        inFlight.set(
          id,
          new Promise<void>((resolve) => {
            done = resolve;
          }),
        );
        return {
          async leave(handled) {
            try {
              if (handled) await store.markSeen(id);
            } finally {
              inFlight.delete(id);
              done();
            }
          },
        };
      }
    },
  };
}
