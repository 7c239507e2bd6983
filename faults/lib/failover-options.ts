/**
 * Command-line options of the failover scenario, `npm run faults -- --scenario failover`
 * (docs/reliability.md, Failover (Patroni)). `--size small` takes about a minute and a half;
 * `--size full` is the figure in the docs.
 */
import { parseArgs } from "node:util";

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

const SIZES: Record<"small" | "full", Omit<FailoverOptions, "size" | "details">> = {
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

export function parseFailoverOptions(argv: string[]): FailoverOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      size: { type: "string", default: "small" },
      help: { type: "boolean", default: false },
      details: { type: "boolean", default: false },
      workers: { type: "string" },
      messages: { type: "string" },
      endpoints: { type: "string" },
      "load-seconds": { type: "string" },
      "kill-at-seconds": { type: "string" },
      "fail-every": { type: "string" },
      "settle-seconds": { type: "string" },
      "watchdog-seconds": { type: "string" },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    process.exit(0);
  }
  const size = values.size;
  if (size !== "small" && size !== "full") throw new Error(`--size is small or full, not ${size}`);
  const o: FailoverOptions = { size, ...SIZES[size], details: values.details === true };
  const num = (flag: keyof typeof values, min: number): number | undefined => {
    const raw = values[flag];
    if (raw === undefined || typeof raw !== "string") return undefined;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${flag} must be a number >= ${min}`);
    return n;
  };
  o.workers = num("workers", 1) ?? o.workers;
  o.messages = num("messages", 1) ?? o.messages;
  o.endpoints = num("endpoints", 1) ?? o.endpoints;
  o.loadSeconds = num("load-seconds", 1) ?? o.loadSeconds;
  o.killAtSeconds = num("kill-at-seconds", 0) ?? o.killAtSeconds;
  o.failEvery = num("fail-every", 0) ?? o.failEvery;
  o.settleSeconds = num("settle-seconds", 1) ?? o.settleSeconds;
  o.watchdogSeconds = num("watchdog-seconds", 30) ?? o.watchdogSeconds;
  if (o.killAtSeconds >= o.loadSeconds)
    throw new Error("--kill-at-seconds must be below --load-seconds");
  return o;
}
