/**
 * `npm run faults -- --scenario ordered`: ordered delivery at the size issue 29 asks for
 * (docs/delivery.md, "Ordering"; docs/reliability.md): 10,000 messages over 100 ordering
 * keys to one endpoint whose receiver answers 503 to one request in five at random, three
 * worker processes (`node dist/cli/main.js worker`), one of them SIGKILLed once a third of
 * the messages are through. test/ordering-workers.test.ts checks the same at the same size
 * inside the test suite; this scenario prints its timings and takes other sizes.
 *
 * Per key the requests must come one message at a time (a message's retries, and its
 * resending after the kill, before the next message) and the first 2xx of each message in
 * send order, every message delivered. Exit code 1 when any of that fails, 2 when the run
 * itself failed (or hung past the watchdog).
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { makePool, type Pool } from "../src/db/pool.ts";
import { writeMessages } from "../src/queue/enqueue-message.ts";
import { generateApiKey } from "../src/security/api-key-format.ts";
import { type RestartableCluster, startRestartableCluster } from "./lib/cluster.ts";
import { guardRun } from "./lib/guard-run.ts";
import { makeProcessSet, type ProcessSet } from "./lib/processes.ts";

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "10000" },
    keys: { type: "string", default: "100" },
    workers: { type: "string", default: "3" },
    "fail-one-in": { type: "string", default: "5" },
    "deadline-seconds": { type: "string", default: "300" },
  },
});
const count = (name: keyof typeof values) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`--${name} is a whole number of at least 1, not ${values[name]}\n`);
    process.exit(2);
  }
  return n;
};
const KEYS = count("keys");
const MESSAGES = Math.ceil(count("messages") / KEYS) * KEYS;
const PER_KEY = MESSAGES / KEYS;
const WORKERS = count("workers");
const FAIL_ONE_IN = count("fail-one-in");
const DEADLINE_MS = count("deadline-seconds") * 1_000;
/** messages per write, mixing the keys, as the API's group commit writes them */
const BATCH = 50;

const log = (line: string) =>
  process.stderr.write(`faults ${new Date().toISOString().slice(11, 19)} ${line}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Seen {
  key: string;
  seq: number;
  status: number;
}
const seen: Seen[] = [];
let oks = 0;
const receiver = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const { key, seq } = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Seen;
    const status = Math.random() < 1 / FAIL_ONE_IN ? 503 : 200;
    seen.push({ key, seq, status });
    if (status === 200) oks++;
    res.writeHead(status).end();
  });
});

let cluster: RestartableCluster | null = null;
let procs: ProcessSet | null = null;
let pool: Pool | null = null;
async function cleanup(): Promise<void> {
  await procs?.killAll().catch(() => undefined);
  await pool?.end().catch(() => undefined);
  receiver.close();
  await cluster?.destroy().catch(() => undefined);
}
guardRun({ watchdogSeconds: DEADLINE_MS / 1_000 + 120, log, cleanup });

async function post(apiUrl: string, key: string, path: string, body: unknown) {
  const res = await fetch(`${apiUrl}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string };
}

/** The keys whose requests broke the order, each with why. */
function orderBreaks(): string[] {
  const breaks: string[] = [];
  for (let k = 0; k < KEYS; k++) {
    const key = `key-${k}`;
    const seqs = seen.filter((s) => s.key === key);
    const back = seqs.findIndex((s, i) => i > 0 && s.seq < (seqs[i - 1] as Seen).seq);
    if (back >= 0) breaks.push(`${key}: message ${seqs[back]?.seq} sent again after a later one`);
    const firsts: number[] = [];
    for (const s of seqs)
      if (s.status === 200 && firsts[firsts.length - 1] !== s.seq) firsts.push(s.seq);
    const wrong = firsts.findIndex((seq, i) => seq !== i);
    if (wrong >= 0 || firsts.length !== PER_KEY)
      breaks.push(
        `${key}: first 2xx of ${firsts.length} of ${PER_KEY} messages, out of order at ${wrong}`,
      );
  }
  return breaks;
}

async function run(): Promise<boolean> {
  log(
    `${MESSAGES} messages over ${KEYS} keys, ${WORKERS} workers, 503 to one request in ${FAIL_ONE_IN}`,
  );
  cluster = await startRestartableCluster();
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const rxUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const key = generateApiKey("admin");
  procs = makeProcessSet({
    DATABASE_URL: cluster.url,
    HOOKRELAY_ADMIN_KEY: key,
    HOOKRELAY_LOG_LEVEL: "error",
    HOOKRELAY_HOST: "127.0.0.1",
    HOOKRELAY_PORT: "0",
    HOOKRELAY_SSRF_ALLOWLIST: "127.0.0.1",
  });
  const api = procs.start("api");
  const apiUrl = await api.ready;
  const app = await post(apiUrl, key, "/api/v1/app", { name: "faults-ordered" });
  const ep = await post(apiUrl, key, `/api/v1/app/${app.id}/endpoint`, {
    url: `${rxUrl}/ordered`,
    maxInFlight: KEYS,
    maxAttempts: 100,
    retryBaseMs: 0,
    retryCapMs: 20,
    failureThreshold: 10_000,
  });
  const workers = Array.from({ length: WORKERS }, () => (procs as ProcessSet).start("worker"));
  await Promise.all(workers.map((w) => w.ready));

  pool = makePool({ connectionString: cluster.url, max: 2 });
  const started = Date.now();
  // message i goes to key i % KEYS: every batch holds messages of many keys
  for (let i = 0; i < MESSAGES; i += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, MESSAGES - i) }, (_, j) => {
      const key = `key-${(i + j) % KEYS}`;
      const seq = Math.floor((i + j) / KEYS);
      return {
        appId: app.id,
        eventType: "ordered.event",
        payload: JSON.stringify({ key, seq }),
        orderingKey: key,
      };
    });
    for (const r of await writeMessages(pool, batch, 100)) if (r instanceof Error) throw r;
  }
  log(`written in ${Date.now() - started} ms`);

  const deadline = started + DEADLINE_MS;
  while (oks < MESSAGES / 3 && Date.now() < deadline) await sleep(50);
  const victim = workers[0];
  if (victim) {
    procs.kill(victim);
    await victim.exited;
    log(`worker ${victim.pid} SIGKILLed after ${oks} 2xx answers`);
  }
  const delivered = async () =>
    Number(
      (
        await (pool as Pool).query(
          "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'delivered'",
          [ep.id],
        )
      ).rows[0].n,
    );
  let done = await delivered();
  while (done < MESSAGES && Date.now() < deadline) {
    await sleep(200);
    done = await delivered();
  }
  const seconds = (Date.now() - started) / 1_000;
  const breaks = orderBreaks();
  const failed503 = seen.filter((s) => s.status === 503).length;
  process.stdout.write(
    [
      "",
      `hookrelay fault suite (ordered): ${MESSAGES} messages over ${KEYS} keys, ${WORKERS} workers, one SIGKILLed`,
      "",
      "| figure | value |",
      "| --- | --- |",
      `| delivered | ${done} of ${MESSAGES} |`,
      `| seconds from the first write to the last delivery | ${seconds.toFixed(1)} |`,
      `| messages delivered per second | ${Math.round(done / seconds)} |`,
      `| requests (503 answers) | ${seen.length} (${failed503}) |`,
      `| keys out of order | ${new Set(breaks.map((b) => b.split(":")[0])).size} |`,
      `| self-exits | ${procs.selfExits.length} |`,
      "",
      ...breaks.slice(0, 20),
    ].join("\n"),
  );
  const ok = done === MESSAGES && breaks.length === 0 && procs.selfExits.length === 0;
  process.stdout.write(`\n${ok ? "PASS" : "FAIL"}\n`);
  return ok;
}

try {
  const ok = await run();
  await cleanup();
  process.exit(ok ? 0 : 1);
} catch (err) {
  log(`run failed: ${(err as Error).stack ?? String(err)}`);
  await cleanup();
  process.exit(2);
}
