#!/usr/bin/env node
// What a hookrelay process costs to start (issue 33, docs/performance.md "What a process
// start costs"): CPU time (user + system) and wall time from spawn to its ready line, for
// `worker`, `api`, `migrate`, `--help` and `endpoint list`, each run `--runs` times; the
// median of each is printed. With several `--root` folders (checkouts of hookrelay, each
// built) the runs alternate between them, command by command, so that every build meets the
// same minutes of a shared machine.
//
//   node scripts/startup-cost.js [--runs 10] [--root DIR ...] [--only worker,api]
//
// The database: DATABASE_URL if set, else an embedded cluster in a temporary folder
// (started through the first root's build, migrated by its `hookrelay migrate`, stopped at
// the end). Linux only: a server's CPU at its ready line is read from /proc/<pid>/stat, a
// command's (run to its end) from /usr/bin/time.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10" },
    root: { type: "string", multiple: true },
    only: { type: "string" },
  },
});
const runs = Number(values.runs);
const roots = (values.root ?? [path.resolve(import.meta.dirname, "..")]).map((r) =>
  path.resolve(r),
);
const ADMIN_KEY = "startup-cost-admin-key";
const TICKS_PER_S = 100; // USER_HZ, what /proc/<pid>/stat counts in on Linux
const DEADLINE_MS = 120_000; // a start that takes longer fails the run

const bin = (root) => path.join(root, "dist", "cli", "main.js");
const baseEnv = (databaseUrl) => ({
  PATH: process.env.PATH ?? "",
  HOME: process.env.HOME ?? "/tmp",
  DATABASE_URL: databaseUrl,
  HOOKRELAY_LOG_LEVEL: "warn",
});

/** user + system CPU of a running process, ms */
function cpuOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // the fields after the command name, which is in parentheses and may hold spaces
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
}

/** Spawns a server, waits for `ready` on its stdout; answers {wallMs, cpuMs, match}, stops it. */
async function serverStart(root, args, env, ready) {
  const t0 = performance.now();
  const child = spawn(process.execPath, [bin(root), ...args], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  let out = "";
  let err = "";
  child.stderr.on("data", (c) => {
    err += c;
  });
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ready line: ${out}${err}`)), DEADLINE_MS);
      child.stdout.on("data", (c) => {
        out += c;
        const match = ready.exec(out);
        if (!match) return;
        const wallMs = performance.now() - t0;
        clearTimeout(timer);
        resolve({ wallMs, cpuMs: cpuOf(child.pid), match });
      });
      void exited.then((code) => reject(new Error(`exited (${code}) before ready: ${out}${err}`)));
    });
  } finally {
    child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(killer);
  }
}

/** Runs a command to its end under /usr/bin/time; answers {wallMs, cpuMs, stdout}. */
async function commandRun(root, args, env) {
  const dir = mkdtempSync(path.join(tmpdir(), "startup-cost-"));
  const timeFile = path.join(dir, "time");
  const t0 = performance.now();
  const child = spawn(
    "/usr/bin/time",
    ["-f", "%U %S", "-o", timeFile, process.execPath, bin(root), ...args],
    { env, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout.on("data", (c) => {
    out += c;
  });
  child.stderr.on("data", (c) => {
    err += c;
  });
  const code = await new Promise((resolve) => child.on("exit", resolve));
  const wallMs = performance.now() - t0;
  const [user, sys] = readFileSync(timeFile, "utf8").trim().split("\n").at(-1).split(" ");
  rmSync(dir, { recursive: true, force: true });
  if (code !== 0) throw new Error(`hookrelay ${args.join(" ")} exited ${code}: ${out}${err}`);
  return { wallMs, cpuMs: (Number(user) + Number(sys)) * 1000, stdout: out };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function main() {
  let databaseUrl = process.env.DATABASE_URL;
  let embedded = null;
  let dataDir = null;
  if (!databaseUrl) {
    dataDir = mkdtempSync(path.join(tmpdir(), "startup-cost-db-"));
    const { startEmbeddedPostgres } = await import(path.join(roots[0], "dist/db/embedded.js"));
    embedded = await startEmbeddedPostgres({
      dataDir,
      port: 0,
      postgresFlags: ["-c", "fsync=off"],
    });
    databaseUrl = embedded.connectionString;
  }
  const env = baseEnv(databaseUrl);
  let api = null;
  try {
    await commandRun(roots[0], ["migrate"], env);
    // one API of the first root for the client commands, and an application to list
    const apiEnv = { ...env, HOOKRELAY_PORT: "0", HOOKRELAY_ADMIN_KEY: ADMIN_KEY };
    api = spawn(process.execPath, [bin(roots[0]), "api"], {
      env: apiEnv,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const url = await new Promise((resolve, reject) => {
      let out = "";
      api.stdout.on("data", (c) => {
        out += c;
        const m = /listening on (http:\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      api.on("exit", (code) => reject(new Error(`the API exited (${code})`)));
    });
    const res = await fetch(`${url}/api/v1/app`, {
      method: "POST",
      headers: { authorization: `Bearer ${ADMIN_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "startup-cost" }),
    });
    if (!res.ok) throw new Error(`creating an application: ${res.status} ${await res.text()}`);
    const appId = (await res.json()).id;

    const cases = {
      worker: (root) => serverStart(root, ["worker"], env, /worker \S+ running/),
      api: (root) =>
        serverStart(root, ["api"], { ...env, HOOKRELAY_PORT: "0" }, /listening on http:\S+/),
      migrate: (root) => commandRun(root, ["migrate"], env),
      help: (root) => commandRun(root, ["--help"], env),
      "endpoint-list": (root) =>
        commandRun(root, ["endpoint", "list", appId, "--url", url, "--key", ADMIN_KEY], env),
    };
    const names = values.only ? values.only.split(",") : Object.keys(cases);
    const figures = new Map();
    for (let run = 0; run < runs; run++) {
      for (const name of names) {
        // alternate the order of the builds from run to run
        const order = run % 2 ? [...roots].reverse() : roots;
        for (const root of order) {
          const { wallMs, cpuMs } = await cases[name](root);
          const key = `${name}\t${root}`;
          if (!figures.has(key)) figures.set(key, { wall: [], cpu: [] });
          figures.get(key).wall.push(wallMs);
          figures.get(key).cpu.push(cpuMs);
        }
      }
      process.stderr.write(`run ${run + 1}/${runs} done\n`);
    }
    console.log(`command\troot\truns\tCPU ms (median, min-max)\twall ms (median, min-max)`);
    for (const [key, { wall, cpu }] of figures) {
      const r = (xs) =>
        `${Math.round(median(xs))} (${Math.round(Math.min(...xs))}-${Math.round(Math.max(...xs))})`;
      console.log(`${key}\t${cpu.length}\t${r(cpu)}\t${r(wall)}`);
    }
  } finally {
    if (api) {
      api.kill("SIGTERM");
      await new Promise((resolve) => (api.exitCode !== null ? resolve() : api.on("exit", resolve)));
    }
    await embedded?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
}

await main();
