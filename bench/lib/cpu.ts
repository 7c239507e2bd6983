/**
 * CPU time spent by groups of processes over a stretch of a run, from /proc (Linux).
 *
 * On a shared VM the wall-clock rates move with the neighbours (CPU steal); CPU time spent
 * per delivery moves far less, so it is what shows whether a change made the work cheaper.
 * The share of the machine's time stolen during the stretch is kept beside it.
 */
import { readdirSync, readFileSync } from "node:fs";

const TICK_MS = 10; // USER_HZ is 100 on every Linux build we run on

/**
 * A process' CPU (utime + stime, ms) and its start (clock ticks after boot, as
 * /proc/uptime * 100 counts them); null once it is gone.
 */
export function processStat(pid: number): { cpuMs: number; startTicks: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // fields after the command (which may hold spaces), 1-based from field 3
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { cpuMs: (Number(rest[11]) + Number(rest[12])) * TICK_MS, startTicks: Number(rest[19]) };
  } catch {
    return null;
  }
}

/** utime + stime of one process in ms; 0 once it is gone. */
function processCpuMs(pid: number): number {
  return processStat(pid)?.cpuMs ?? 0;
}

/**
 * Every process whose /proc/<pid>/stat field `field` (counted after the command, which may
 * hold spaces: 0 state, 1 ppid, 2 pgrp) equals `value`.
 */
function processesWhere(field: number, value: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[field]) === value)
        pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The pid and every child of it (PostgreSQL's backends are children of the postmaster). */
export function withChildren(pid: number): number[] {
  return [pid, ...processesWhere(1, pid)];
}

/**
 * The processes of a process group (a server script started in a group of its own and what
 * it runs: RabbitMQ's script, its Erlang VM and their helpers).
 */
export function processGroup(pgid: number): number[] {
  return processesWhere(2, pgid);
}

/** The machine's CPU time by kind, in ticks (the "cpu" line of /proc/stat). */
function machineTicks(): { total: number; steal: number } {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0]!;
  const values = line.trim().split(/\s+/).slice(1, 9).map(Number);
  return { total: values.reduce((a, b) => a + b, 0), steal: values[7] ?? 0 };
}

export interface CpuGroups {
  [group: string]: () => number[];
}

export interface CpuSpent {
  /** CPU ms per group over the stretch */
  ms: Record<string, number>;
  /** share of the machine's time the hypervisor gave to others (0..1) */
  steal: number;
}

/**
 * Starts measuring: the groups' pids are looked up again at the end (backends may have
 * started meanwhile); a process that ended during the stretch loses its share.
 */
export function startCpuMeter(groups: CpuGroups): () => CpuSpent {
  const before = new Map<number, number>();
  for (const pids of Object.values(groups))
    for (const pid of pids()) before.set(pid, processCpuMs(pid));
  const machineBefore = machineTicks();
  return () => {
    const ms: Record<string, number> = {};
    for (const [group, pids] of Object.entries(groups)) {
      ms[group] = pids().reduce((sum, pid) => sum + processCpuMs(pid) - (before.get(pid) ?? 0), 0);
    }
    const machine = machineTicks();
    const total = machine.total - machineBefore.total;
    return { ms, steal: total > 0 ? (machine.steal - machineBefore.steal) / total : 0 };
  };
}

/** CPU ms per 1,000 units of work (requests, deliveries, jobs, messages). */
export function perThousand(spent: CpuSpent, units: number): CpuSpent {
  return {
    ms: Object.fromEntries(
      Object.entries(spent.ms).map(([group, ms]) => [group, (ms * 1000) / Math.max(1, units)]),
    ),
    steal: spent.steal,
  };
}
