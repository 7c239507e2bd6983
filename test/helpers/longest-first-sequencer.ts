/**
 * The order vitest starts test files in: longest first, so that the two workers (see
 * vitest.config.ts) finish together instead of one running a minute-long file alone at
 * the end. vitest's own order sorts by the durations of the last run on this machine,
 * kept under node_modules/.vite, which `npm ci` removes (so CI never has them), and
 * otherwise by file size, largest first: that put the slowest small files (the bench smoke
 * test, the failover scenario) last.
 *
 * A file's expected cost: its figure in typical-durations.ts, else the last run's
 * duration here, else nothing; equal costs go largest file first, as vitest does.
 */
import path from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { TYPICAL_SECONDS } from "./typical-durations.ts";

/** What the sequencer reads of vitest's cache of earlier runs. */
export interface RunCache {
  getFileTestResults(key: string): { duration: number } | undefined;
  getFileStats(key: string): { size: number } | undefined;
}

/** `files` (paths relative to the root) longest expected first. */
export function longestFirst<T>(
  files: readonly T[],
  relativePath: (file: T) => string,
  cache: RunCache,
  cacheKey: (file: T) => string = relativePath,
): T[] {
  const costs = new Map(
    files.map((f) => {
      const typical = TYPICAL_SECONDS[relativePath(f)];
      const ms =
        typical !== undefined ? typical * 1000 : cache.getFileTestResults(cacheKey(f))?.duration;
      return [f, { ms: ms ?? 0, size: cache.getFileStats(cacheKey(f))?.size ?? 0 }];
    }),
  );
  const cost = (f: T) => costs.get(f)!;
  return [...files].sort((a, b) => cost(b).ms - cost(a).ms || cost(b).size - cost(a).size);
}

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const relativePath = (f: TestSpecification) => path.relative(root, f.moduleId);
    // vitest's cache key: the project's name, then the path
    return longestFirst(
      files,
      relativePath,
      this.ctx.cache,
      (f) => `${f.project.name}:${relativePath(f)}`,
    );
  }
}
