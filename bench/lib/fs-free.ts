/**
 * What the filesystem alone takes to free a dropped table's bytes (docs/performance.md,
 * "Where a day's drop spends its time"). A drop's commit unlinks the table's files, and the kernel
 * frees their blocks inside that call; on a disk mounted with online discard (this
 * machine's: `discard` in /proc/mounts) it also trims them there, about 0.25 ms per MB,
 * which is most of a day's drop. So beside each timed drop the bench frees as many bytes
 * of a plain cold file on the same filesystem, and reports that time and the drop's time
 * without it (PostgreSQL's own part).
 */
import { open, readFile, realpath, rm, truncate } from "node:fs/promises";
import path from "node:path";
import { evictFile } from "./page-cache.ts";
import { nowMs } from "./stats.ts";

/** Milliseconds to truncate a cold file of `bytes` to nothing, in `dir`. */
export async function timeFilesystemFree(dir: string, bytes: number): Promise<number> {
  const file = path.join(dir, `fs-free-probe-${process.pid}`);
  const handle = await open(file, "w");
  try {
    // not zeros: a filesystem may keep those sparse
    const chunk = Buffer.alloc(1 << 20, 0x5a);
    for (let left = bytes; left > 0; left -= chunk.length)
      await handle.write(chunk, 0, Math.min(chunk.length, left));
    await handle.datasync();
  } finally {
    await handle.close();
  }
  try {
    await evictFile(file);
    const t0 = nowMs();
    await truncate(file, 0);
    return nowMs() - t0;
  } finally {
    await rm(file, { force: true });
  }
}

/** Whether `dir`'s filesystem is mounted with online discard (Linux; false where unknown). */
export async function mountedWithDiscard(dir: string): Promise<boolean> {
  try {
    const real = await realpath(dir);
    const mounts = (await readFile("/proc/mounts", "utf8"))
      .split("\n")
      .map((line) => line.split(" "))
      .filter(
        (f) => f.length > 3 && (real === f[1] || real.startsWith(`${f[1] === "/" ? "" : f[1]}/`)),
      )
      .sort((a, b) => b[1]!.length - a[1]!.length);
    return mounts[0]?.[3]?.split(",").includes("discard") ?? false;
  } catch {
    return false;
  }
}
