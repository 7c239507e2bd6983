/**
 * Deduplication by webhook-id. A sender that delivers at least once (docs/delivery.md,
 * At-least-once) may send the same message again; the receiver remembers the ids it has
 * acted on and acknowledges a repeat without acting twice. See docs/receiver.md (Dedup).
 */

/** Where seen webhook ids are kept. */
export interface DedupStore {
  /** Whether `id` is marked seen (and the mark has not expired). */
  seen(id: string): boolean | Promise<boolean>;
  /** Marks `id` seen; false when it already was. */
  markSeen(id: string): boolean | Promise<boolean>;
}

export interface MemoryDedupStoreOptions {
  /** most ids kept; the oldest mark is dropped beyond it; default 100_000 */
  maxEntries?: number;
  /** how long a mark lasts, in milliseconds; default 86_400_000 (24 h) */
  ttlMs?: number;
  /** the clock, in milliseconds; default Date.now */
  clock?: () => number;
}

export interface MemoryDedupStore extends DedupStore {
  seen(id: string): boolean;
  markSeen(id: string): boolean;
  /** ids currently marked (expired ones may still count until the next call drops them) */
  readonly size: number;
}

export const MEMORY_DEDUP_DEFAULTS = { maxEntries: 100_000, ttlMs: 86_400_000 } as const;

/**
 * A bounded in-memory store for one process. Every mark has the same lifetime, so the
 * Map's insertion order is also expiry order: expired marks and, past `maxEntries`, the
 * oldest ones are dropped from the front, O(1) per call. It forgets on restart and is not
 * shared between processes; use the PostgreSQL store for that.
 */
export function makeMemoryDedupStore(options: MemoryDedupStoreOptions = {}): MemoryDedupStore {
  const maxEntries = options.maxEntries ?? MEMORY_DEDUP_DEFAULTS.maxEntries;
  const ttlMs = options.ttlMs ?? MEMORY_DEDUP_DEFAULTS.ttlMs;
  const clock = options.clock ?? Date.now;
  if (!Number.isInteger(maxEntries) || maxEntries < 1) {
    throw new RangeError(`maxEntries must be an integer >= 1, got ${maxEntries}`);
  }
  if (!(ttlMs > 0)) throw new RangeError(`ttlMs must be > 0, got ${ttlMs}`);
  const expiries = new Map<string, number>(); // id -> expiry time (ms), oldest first

  const dropExpired = (now: number) => {
    for (const [id, expiresAt] of expiries) {
      if (expiresAt > now) break;
      expiries.delete(id);
    }
  };

  return {
    seen(id) {
      dropExpired(clock());
      return expiries.has(id);
    },
    markSeen(id) {
      const now = clock();
      dropExpired(now);
      if (expiries.has(id)) return false;
      expiries.set(id, now + ttlMs);
      if (expiries.size > maxEntries) {
        const oldest = expiries.keys().next().value as string;
        expiries.delete(oldest);
      }
      return true;
    },
    get size() {
      return expiries.size;
    },
  };
}
