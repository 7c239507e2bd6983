/**
 * PostgreSQL's CPU over a stretch of a run, split by what each process is: the pool's
 * backends, the dedicated connections (by application_name), autovacuum, the WAL writer,
 * the checkpointer. startCpuMeter (cpu.ts) gives the total; this tells where it went when
 * the total moves between two trees and the statements it runs did not.
 *
 * Unlike startCpuMeter it samples every 200 ms, so a process that ends during the stretch
 * (an autovacuum worker, a closed connection) keeps what it spent up to its last sample,
 * and one that starts during it counts from zero.
 */
import { readFileSync } from "node:fs";
import type { Pool } from "../../src/db/pool.ts";
import { processStat } from "./cpu.ts";

const SAMPLE_MS = 200;

interface Seen {
  first: number;
  last: number;
  kind: string;
}

function uptimeTicks(): number {
  return Math.round(Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]) * 100);
}

/** The kind PostgreSQL's title gives the process (`postgres: walwriter`, `postgres: user db ...`). */
function titleKind(pid: number): string {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
    const m =
      /^postgres: (autovacuum worker|autovacuum launcher|walwriter|checkpointer|background writer|logical replication launcher|walsender|stats collector|io worker)/.exec(
        title,
      );
    if (m) return m[1]!;
    if (/^postgres: \S+ \S+ /.test(title)) return "backend";
    return "postmaster";
  } catch {
    return "gone";
  }
}

export interface PgCpuByKind {
  /** CPU ms by kind and how many processes of it were seen */
  kinds: Record<string, { ms: number; processes: number }>;
}

/**
 * Starts sampling `pids()` (the cluster's processes). Client backends are named by their
 * application_name, looked up in pg_stat_activity through `pool` when first seen
 * ("pool" when it is unset: the workers' and the API's pools).
 */
export function startPgCpuByKind(pids: () => number[], pool: Pool): () => Promise<PgCpuByKind> {
  const startedAt = uptimeTicks();
  const seen = new Map<number, Seen>();
  const unnamed: number[] = [];
  let naming: Promise<void> = Promise.resolve();

  const name = async (backendPids: number[]) => {
    const { rows } = await pool.query<{ pid: number; app: string; db: string | null }>(
      "select pid, application_name as app, datname as db from pg_stat_activity where pid = any($1)",
      [backendPids],
    );
    for (const r of rows) {
      const s = seen.get(r.pid);
      if (s) s.kind = r.app ? r.app : "pool";
    }
  };

  const sample = () => {
    for (const pid of pids()) {
      const st = processStat(pid);
      if (!st) continue;
      const s = seen.get(pid);
      if (s) {
        s.last = st.cpuMs;
        continue;
      }
      const kind = titleKind(pid);
      seen.set(pid, {
        first: st.startTicks >= startedAt ? 0 : st.cpuMs,
        last: st.cpuMs,
        kind,
      });
      if (kind === "backend") unnamed.push(pid);
    }
    if (unnamed.length > 0) {
      const batch = unnamed.splice(0);
      naming = naming.then(() => name(batch)).catch(() => {});
    }
  };

  sample();
  const timer = setInterval(sample, SAMPLE_MS);
  return async () => {
    clearInterval(timer);
    sample();
    await naming;
    const kinds: PgCpuByKind["kinds"] = {};
    for (const s of seen.values()) {
      const k = kinds[s.kind] ?? { ms: 0, processes: 0 };
      k.ms += s.last - s.first;
      k.processes++;
      kinds[s.kind] = k;
    }
    return { kinds };
  };
}

/** "pool 4,210 ms (12), autovacuum worker 820 ms (3), ..." per 1,000 units, largest first. */
export function formatPgCpuByKind(c: PgCpuByKind, units: number): string {
  return Object.entries(c.kinds)
    .filter(([, k]) => k.ms > 0)
    .sort((a, b) => b[1].ms - a[1].ms)
    .map(
      ([kind, k]) =>
        `${kind} ${((k.ms * 1000) / Math.max(1, units)).toFixed(1)} ms (${k.processes})`,
    )
    .join(", ");
}
