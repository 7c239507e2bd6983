/**
 * Coalesces lookups made by concurrent requests: keys asked for while no lookup runs are
 * fetched together on the next tick, and keys asked for while one runs wait for it and go
 * in the next, `where key = any($1)`. Under load that is one query per round trip instead
 * of one per request. Each caller still gets a fresh answer from the database (a lookup
 * that starts after the caller asked); nothing is cached between lookups.
 */
export interface BatchLoader<K, V> {
  load(key: K): Promise<V | undefined>;
}

interface Waiting<K, V> {
  key: K;
  resolve(v: V | undefined): void;
  reject(e: unknown): void;
}

export function makeBatchLoader<K, V>(
  fetch: (keys: K[]) => Promise<Map<K, V>>,
  maxBatch = 500,
): BatchLoader<K, V> {
  let waiting: Array<Waiting<K, V>> = [];
  let scheduled = false;
  let fetching = false;

  async function run(): Promise<void> {
    scheduled = false;
    fetching = true;
    try {
      while (waiting.length > 0) {
        const batch = waiting.slice(0, maxBatch);
        waiting = waiting.slice(batch.length);
        try {
          const found = await fetch([...new Set(batch.map((w) => w.key))]);
          for (const w of batch) w.resolve(found.get(w.key));
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      fetching = false;
    }
  }

  return {
    load(key) {
      return new Promise((resolve, reject) => {
        waiting.push({ key, resolve, reject });
        if (fetching || scheduled) return;
        scheduled = true;
        setImmediate(() => void run());
      });
    },
  };
}
