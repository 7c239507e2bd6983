/**
 * Command-line options of `npm run faults` (docs/reliability.md). `--size small` is what CI
 * runs (about a minute); `--size full` is the figure in the docs. Any count can be set on
 * its own after the size.
 */
import { type NumericFlag, parseSizedOptions } from "./sized-options.ts";

export interface FaultOptions {
  size: "small" | "full";
  /** worker processes kept running (a killed one is replaced at once) */
  workers: number;
  messages: number;
  /** endpoints of the one app: every message fans out to all of them */
  endpoints: number;
  /** how long the load and the kills last */
  churnSeconds: number;
  /** one worker is SIGKILLed this often during the churn */
  killEverySeconds: number;
  /** PostgreSQL is stopped once, at the middle of the churn, for this long */
  pgDownSeconds: number;
  /** the first attempt of one delivery in this many is answered 503 */
  failEvery: number;
  /** one request in this many is held open for holdMs, so kills catch requests in flight */
  holdEvery: number;
  holdMs: number;
  /** the endpoints' request timeout (HOOKRELAY_TIMEOUT_MS) */
  timeoutMs: number;
  /** lease = timeout + this (HOOKRELAY_LEASE_MARGIN_MS) */
  leaseMarginMs: number;
  /** after the churn, wait at most this long for every accepted delivery */
  settleSeconds: number;
  /** give up on the whole run after this long */
  watchdogSeconds: number;
  /** also print a timeline of every cut request and of the first duplicates */
  details: boolean;
}

type Preset = Omit<FaultOptions, "size" | "details">;

const SIZES: Record<"small" | "full", Preset> = {
  small: {
    workers: 2,
    messages: 300,
    endpoints: 5,
    churnSeconds: 20,
    killEverySeconds: 4,
    pgDownSeconds: 2,
    failEvery: 7,
    holdEvery: 8,
    holdMs: 1_500,
    // a short lease keeps the lease-bound hand-back (and so the run) short
    timeoutMs: 5_000,
    leaseMarginMs: 5_000,
    settleSeconds: 90,
    watchdogSeconds: 240,
  },
  full: {
    workers: 3,
    messages: 5_000,
    endpoints: 10,
    churnSeconds: 60,
    killEverySeconds: 3,
    pgDownSeconds: 3,
    failEvery: 7,
    holdEvery: 40,
    holdMs: 2_000,
    // hookrelay's defaults
    timeoutMs: 15_000,
    leaseMarginMs: 30_000,
    settleSeconds: 180,
    watchdogSeconds: 600,
  },
};

const HELP = `npm run faults -- [options]

  --size small|full         preset sizes (default small; full is the docs' figure)
  --workers <n>             worker processes (small 2, full 3)
  --messages <n>            messages sent during the churn (small 300, full 5000)
  --endpoints <n>           endpoints each message fans out to (small 5, full 10)
  --churn-seconds <s>       how long load and kills last (small 20, full 60)
  --kill-every-seconds <s>  one worker SIGKILLed this often (small 4, full 3)
  --pg-down-seconds <s>     PostgreSQL stopped once mid-churn for this long (small 2, full 3)
  --fail-every <n>          first attempt of 1 delivery in n answered 503 (7)
  --hold-every <n>          1 request in n held open --hold-ms (small 8, full 40)
  --hold-ms <ms>            (small 1500, full 2000)
  --timeout-ms <ms>         endpoint timeout (small 5000, full 15000)
  --lease-margin-ms <ms>    lease = timeout + margin (small 5000, full 30000)
  --settle-seconds <s>      wait at most this long after the churn (small 90, full 180)
  --watchdog-seconds <s>    give up on the whole run (small 240, full 600)
  --details                 also print when each cut delivery and the first duplicates
                            arrived, in seconds after the first kill
`;

const FLAGS: Record<string, NumericFlag<Preset>> = {
  workers: { key: "workers", min: 1 },
  messages: { key: "messages", min: 1 },
  endpoints: { key: "endpoints", min: 1 },
  "churn-seconds": { key: "churnSeconds", min: 1 },
  "kill-every-seconds": { key: "killEverySeconds", min: 0.5 },
  "pg-down-seconds": { key: "pgDownSeconds", min: 0 },
  "fail-every": { key: "failEvery", min: 0 },
  "hold-every": { key: "holdEvery", min: 0 },
  "hold-ms": { key: "holdMs", min: 0 },
  "timeout-ms": { key: "timeoutMs", min: 100 },
  "lease-margin-ms": { key: "leaseMarginMs", min: 0 },
  "settle-seconds": { key: "settleSeconds", min: 1 },
  "watchdog-seconds": { key: "watchdogSeconds", min: 10 },
};

export function parseFaultOptions(argv: string[]): FaultOptions {
  const o = parseSizedOptions(argv, { sizes: SIZES, help: HELP, flags: FLAGS });
  if (o.holdMs >= o.timeoutMs) throw new Error("--hold-ms must be below --timeout-ms");
  return o;
}
