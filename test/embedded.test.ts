/**
 * The embedded database as a user meets it (docs/embedded.md): `hookrelay start` with no
 * DATABASE_URL, in its own process group as a terminal runs it. Ctrl-C (SIGINT to the
 * group) exits cleanly and stops PostgreSQL; after kill -9 the next start takes the still
 * running cluster over; after PostgreSQL was killed too, it starts again; as root, a data
 * folder the postgres user cannot enter is left as it is and the cluster kept elsewhere.
 * The operator commands that check it (app create, app list, db-url) run in this process
 * (helpers/cli.ts runCliInProcess), finding the server through the data folder's cli.json.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { isAlive } from "../src/db/embedded-state.ts";
import { binariesFor, ensurePostgresUser, SHARED_DIR } from "../src/db/postgres-as-root.ts";
import { runCliInProcess, show } from "./helpers/cli.ts";
import { waitFor } from "./helpers/receiver.ts";

const ROOT = path.resolve(import.meta.dirname, "..");
const isRoot = process.getuid?.() === 0;
const cleanup: string[] = [];
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  // retried: a just-stopped PostgreSQL may still be finishing its last writes
  for (const dir of cleanup)
    await rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
});

interface Started {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
}

/** `hookrelay start` on the embedded database in `dataDir`, in a process group of its own. */
async function start(dataDir: string): Promise<Started> {
  let out = "";
  const child = spawn(process.execPath, [path.join(ROOT, "dist/cli/main.js"), "start"], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      HOOKRELAY_DATA_DIR: dataDir,
      HOOKRELAY_PORT: "0",
    },
  });
  children.push(child);
  child.stdout!.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr!.on("data", (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  await waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`start exited:\n${out}`);
      return /worker \S+ running/.test(out);
    },
    90_000,
    "hookrelay start",
  );
  return { child, out: () => out, exited };
}

async function postmasterPid(clusterDir: string): Promise<number> {
  return Number((await readFile(path.join(clusterDir, "postmaster.pid"), "utf8")).split("\n")[0]);
}

async function dataFolder(): Promise<string> {
  const parent = await mkdtemp(path.join(tmpdir(), "hookrelay-embedded-"));
  cleanup.push(parent);
  // open to the postgres user (as root), so the cluster stays in <data>/pg
  await chmod(parent, 0o755);
  return path.join(parent, "data"); // created by hookrelay
}

describe("the embedded database", { timeout: 240_000 }, () => {
  test("Ctrl-C exits 0 with one line and stops PostgreSQL; kill -9 and restarts lose nothing", async () => {
    const dataDir = await dataFolder();
    const clusterDir = path.join(dataDir, "pg");
    const first = await start(dataDir);
    expect(first.out()).toMatch(
      /^embedded PostgreSQL: postgres:\/\/postgres:\*\*\*\*@127\.0\.0\.1:\d+\/hookrelay$/m,
    );
    const env = { HOOKRELAY_DATA_DIR: dataDir };
    const created = await runCliInProcess(["app", "create", "Kept", "--uid", "kept"], { env });
    expect(created.code, show(created)).toBe(0);

    // kill -9: PostgreSQL keeps running; the next start takes it over
    const pg1 = await postmasterPid(clusterDir);
    process.kill(first.child.pid!, "SIGKILL");
    await first.exited;
    expect(await isAlive(pg1)).toBe(true);
    const second = await start(dataDir);
    expect(second.out()).toMatch(
      /took over the embedded PostgreSQL left running by a killed process/,
    );
    expect(await postmasterPid(clusterDir)).toBe(pg1);
    expect((await runCliInProcess(["app", "list"], { env })).stdout).toMatch(/\skept\s+Kept\s/);

    // both killed: a stale postmaster.pid; the next start removes it and starts again
    process.kill(second.child.pid!, "SIGKILL");
    process.kill(pg1, "SIGKILL");
    await second.exited;
    await waitFor(async () => !(await isAlive(pg1)), 10_000, "postgres to die");
    const third = await start(dataDir);
    expect(third.out()).toMatch(/removed the postmaster\.pid of a PostgreSQL that was killed/);
    expect((await runCliInProcess(["app", "list"], { env })).stdout).toMatch(/\skept\s+Kept\s/);

    // Ctrl-C in a terminal: SIGINT to the whole foreground group
    const pg3 = await postmasterPid(clusterDir);
    const before = third.out().length;
    process.kill(-third.child.pid!, "SIGINT");
    expect(await third.exited).toBe(0);
    const after = third.out().slice(before).trim().split("\n");
    expect(after, third.out()).toHaveLength(1);
    expect(after[0]).toMatch(/draining/);
    expect(third.out()).not.toMatch(/57P01|terminating connection|\n\s+at /);
    expect(await isAlive(pg3)).toBe(false);
  });

  test.runIf(isRoot)(
    "as root, a data folder the postgres user cannot enter keeps its mode; the cluster lives in /var/lib/hookrelay",
    async () => {
      const closed = await mkdtemp(path.join(tmpdir(), "hookrelay-closed-")); // 0700, like /root
      cleanup.push(closed);
      const dataDir = path.join(closed, "checkout", ".hookrelay");
      const s = await start(dataDir);
      const state = JSON.parse(await readFile(path.join(dataDir, "embedded.json"), "utf8"));
      expect(state.clusterDir).toMatch(new RegExp(`^${SHARED_DIR}/clusters/[0-9a-f]{16}$`));
      cleanup.push(state.clusterDir);
      expect(s.out()).toMatch(
        /the postgres user cannot enter .*hookrelay-closed-\w+: the database of .* is kept in \/var\/lib\/hookrelay\/clusters\//,
      );
      expect((await stat(closed)).mode & 0o777).toBe(0o700);
      const url = await runCliInProcess(["db-url", "--masked"], {
        env: { HOOKRELAY_DATA_DIR: dataDir },
      });
      expect(url.code, show(url)).toBe(0);
      process.kill(-s.child.pid!, "SIGINT");
      expect(await s.exited).toBe(0);
    },
  );

  test.runIf(isRoot)(
    "as root, binaries out of the postgres user's reach are copied once",
    async () => {
      const closed = await mkdtemp(path.join(tmpdir(), "hookrelay-bin-"));
      cleanup.push(closed);
      const root = path.join(closed, "native");
      await mkdir(path.join(root, "bin"), { recursive: true });
      await writeFile(path.join(root, "bin", "postgres"), "#!/bin/sh\n", { mode: 0o755 });
      const version = `test-${path.basename(closed)}`;
      cleanup.push(path.join(SHARED_DIR, `postgres-${version}`));
      const user = await ensurePostgresUser();
      const first = await binariesFor({ root, version }, user);
      expect(first.binaries.root).toBe(path.join(SHARED_DIR, `postgres-${version}`));
      expect(first.note).toMatch(
        /cannot enter .*hookrelay-bin-\w+, where the PostgreSQL binaries are installed/,
      );
      expect((await stat(path.join(first.binaries.root, "bin", "postgres"))).mode & 0o111).not.toBe(
        0,
      );
      // reachable binaries are used where they are
      const open = path.join(SHARED_DIR, `postgres-${version}`);
      expect((await binariesFor({ root: open, version }, user)).note).toBeNull();
    },
  );
});
