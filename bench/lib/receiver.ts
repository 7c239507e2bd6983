/** Controls the receiver child process (bench/children/receiver.ts) over IPC. */
import { type Child, forkChild, stopChild } from "./procs.ts";
import { sleep } from "./stats.ts";

export interface ReceiverStats {
  total: number;
  healthy: number;
  hung: number;
  failed: number;
  unsigned: number;
  badSignature: number;
  verified: number;
  first: number;
  last: number;
  healthyFirst: number;
  healthyLast: number;
}

export interface ReceiverBehaviour {
  delayMs?: number;
  failRate?: number;
  /** endpoint indexes that never answer */
  hanging?: number[];
  /** keep (webhook-id, time) of every healthy request */
  record?: boolean;
  /** verify one request in 100 with this secret */
  secret?: string | null;
}

export interface ReceiverControl {
  pid: number;
  /** URL of endpoint i: its own port, path /e/i */
  urls: string[];
  configure(b: ReceiverBehaviour): Promise<void>;
  /** zero the counters, cut off hanging requests */
  reset(): Promise<void>;
  stats(): Promise<ReceiverStats>;
  /** recorded requests: webhook-id and arrival time on the wall clock (ms since the epoch) */
  records(): Promise<{ ids: string[]; at: number[] }>;
  /** Waits until `count` healthy requests arrived, at most `timeoutMs`; returns the stats. */
  waitForHealthy(count: number, timeoutMs: number): Promise<ReceiverStats>;
  stop(): Promise<void>;
}

export async function startReceiver(endpoints: number): Promise<ReceiverControl> {
  const child: Child = forkChild("receiver.ts", [String(endpoints)]);
  let seq = 0;
  const pending = new Map<number, (body: Record<string, unknown>) => void>();
  const ready = new Promise<number[]>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`receiver not ready:\n${child.output()}`)),
      60_000,
    );
    child.proc.on("message", (m: { seq: number; ready?: boolean; ports?: number[] }) => {
      if (m.seq === 0 && m.ready) {
        clearTimeout(timer);
        resolve(m.ports ?? []);
        return;
      }
      pending.get(m.seq)?.(m as Record<string, unknown>);
      pending.delete(m.seq);
    });
    child.proc.once("exit", (code) =>
      reject(new Error(`receiver exited (${code}):\n${child.output()}`)),
    );
  });
  const ports = await ready;

  function call(cmd: string, extra: object = {}): Promise<Record<string, unknown>> {
    const id = ++seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`receiver did not answer ${cmd}`));
      }, 30_000);
      pending.set(id, (body) => {
        clearTimeout(timer);
        resolve(body);
      });
      child.proc.send({ seq: id, cmd, ...extra });
    });
  }

  const control: ReceiverControl = {
    pid: child.pid,
    urls: ports.map((port, i) => `http://127.0.0.1:${port}/e/${i}`),
    async configure(b) {
      await call("configure", b);
    },
    async reset() {
      await call("reset");
    },
    async stats() {
      return (await call("stats")).stats as ReceiverStats;
    },
    async records() {
      const r = await call("records");
      return { ids: r.ids as string[], at: r.at as number[] };
    },
    async waitForHealthy(count, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const s = await control.stats();
        if (s.healthy >= count || Date.now() >= deadline) return s;
        await sleep(50);
      }
    },
    async stop() {
      child.proc.disconnect();
      await stopChild(child, 2_000);
    },
  };
  return control;
}
