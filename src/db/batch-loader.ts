/**
 * Coalesces lookups made by concurrent requests: keys asked for in the same tick (and while
 * the previous lookup runs) are fetched with one query, `where key = any($1)`. Each caller
 * still gets a fresh answer from the database; nothing is cached between lookups.
 */
export interface BatchLoader<K, V> {
  load(key: K): Promise<V | undefined>;
}

export function makeBatchLoader<K, V>(fetch: (keys: K[]) => Promise<Map<K, V>>, maxBatch = 500): BatchLoader<K, V> {
  let waiting: Array<{ key: K; resolve(v: V | undefined): void; reject(e: unknown): void }> = [];
  let scheduled = false;

  async function run(): Promise<void> {
    scheduled = false;
    const batch = waiting.slice(0, maxBatch);
    waiting = waiting.slice(batch.length);
    if (waiting.length > 0) schedule();
    try {
      const found = await fetch([...new Set(batch.map((w) => w.key))]);
      for (const w of batch) w.resolve(found.get(w.key));
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => void run());
  }

  return {
    load(key) {
      return new Promise((resolve, reject) => {
        waiting.push({ key, resolve, reject });
        schedule();
      });
    },
  };
}
