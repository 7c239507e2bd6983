/**
 * Command-line options of the failover scenario, `npm run faults -- --scenario failover`
 * (docs/reliability.md, Failover (Patroni)). `--size small` takes about a minute and a half;
 * `--size full` is the figure in the docs.
 */
import { type NumericFlag, parseSizedOptions } from "./sized-options.ts";

export interface FailoverOptions {
  size: "small" | "full";
  workers: number;
  messages: number;
  endpoints: number;
  /** how long the producers send */
  loadSeconds: number;
  /** the primary's postmaster is SIGKILLed this long after the load starts */
  killAtSeconds: number;
  /** the first attempt of one delivery in this many is answered 503 by the receiver */
  failEvery: number;
  /** after the load, wait at most this long for every accepted delivery */
  settleSeconds: number;
  watchdogSeconds: number;
  /** also print the last log lines of every hookrelay process and of Patroni and haproxy */
  details: boolean;
}

type Preset = Omit<FailoverOptions, "size" | "details">;

const SIZES: Record<"small" | "full", Preset> = {
  small: {
    workers: 2,
    messages: 400,
    endpoints: 4,
    loadSeconds: 30,
    killAtSeconds: 10,
    failEvery: 7,
    settleSeconds: 60,
    watchdogSeconds: 300,
  },
  full: {
    workers: 2,
    messages: 3_000,
    endpoints: 10,
    loadSeconds: 60,
    killAtSeconds: 20,
    failEvery: 7,
    settleSeconds: 120,
    watchdogSeconds: 480,
  },
};

const HELP = `npm run faults -- --scenario failover [options]

  --size small|full         preset sizes (default small; full is the docs' figure)
  --workers <n>             worker processes (2)
  --messages <n>            messages sent during the load (small 400, full 3000)
  --endpoints <n>           endpoints each message fans out to (small 4, full 10)
  --load-seconds <s>        how long the producers send (small 30, full 60)
  --kill-at-seconds <s>     SIGKILL the primary's postmaster this long into the load (small 10, full 20)
  --fail-every <n>          first attempt of 1 delivery in n answered 503 (7)
  --settle-seconds <s>      wait at most this long after the load (small 60, full 120)
  --watchdog-seconds <s>    give up on the whole run (small 300, full 480)
  --details                 also print the last log lines of hookrelay, Patroni and haproxy
`;

const FLAGS: Record<string, NumericFlag<Preset>> = {
  workers: { key: "workers", min: 1 },
  messages: { key: "messages", min: 1 },
  endpoints: { key: "endpoints", min: 1 },
  "load-seconds": { key: "loadSeconds", min: 1 },
  "kill-at-seconds": { key: "killAtSeconds", min: 0 },
  "fail-every": { key: "failEvery", min: 0 },
  "settle-seconds": { key: "settleSeconds", min: 1 },
  "watchdog-seconds": { key: "watchdogSeconds", min: 30 },
};

export function parseFailoverOptions(argv: string[]): FailoverOptions {
  const o = parseSizedOptions(argv, { sizes: SIZES, help: HELP, flags: FLAGS });
  if (o.killAtSeconds >= o.loadSeconds)
    throw new Error("--kill-at-seconds must be below --load-seconds");
  return o;
}
