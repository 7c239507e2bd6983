/**
 * PostgreSQL refuses to run as root, so as root the embedded database runs as the
 * `postgres` system user (created if missing). That user must reach the binaries and the
 * cluster's folder; in a checkout under a folder only root may enter (`/root`, mode 0700,
 * the usual home of root in containers), it reaches neither. hookrelay then never loosens
 * the user's folders: it copies the binaries to a shared place once and keeps the cluster
 * there too, and says so. See docs/embedded.md.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, cp, mkdir, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { ConfigError } from "../errors.ts";
import type { PostgresBinaries } from "./postgres-cluster.ts";

const exec = promisify(execFile);

/** Where root keeps what the postgres user must reach. */
export const SHARED_DIR = "/var/lib/hookrelay";

export interface PostgresUser {
  uid: number;
  gid: number;
  /** true when this call created it */
  created: boolean;
}

async function ids(): Promise<{ uid: number; gid: number } | null> {
  try {
    const uid = Number((await exec("id", ["-u", "postgres"])).stdout.trim());
    const gid = Number((await exec("id", ["-g", "postgres"])).stdout.trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : null;
  } catch {
    return null;
  }
}

/** The postgres system user; created (no login, no home) when there is none. */
export async function ensurePostgresUser(): Promise<PostgresUser> {
  const found = await ids();
  if (found) return { ...found, created: false };
  try {
    await exec("groupadd", ["--system", "postgres"]).catch(() => undefined);
    await exec("useradd", [
      "--system",
      "--gid",
      "postgres",
      "--no-create-home",
      "--home-dir",
      SHARED_DIR,
      "--shell",
      "/usr/sbin/nologin",
      "postgres",
    ]);
  } catch (err) {
    throw new ConfigError(
      "PostgreSQL cannot run as root and no postgres user could be created (useradd failed): create one (useradd --system postgres), run hookrelay as another user, or set DATABASE_URL",
      { cause: err },
    );
  }
  const created = await ids();
  if (!created) throw new ConfigError("the postgres user was created but cannot be found");
  return { ...created, created: true };
}

/**
 * The first folder on the way to `target` (itself included) that `user` may not pass
 * through, or null when it reaches `target`. Unix permission bits only (no ACLs).
 */
export async function firstBlockedFolder(
  target: string,
  user: { uid: number; gid: number },
): Promise<string | null> {
  const parts = path.resolve(target).split(path.sep).filter(Boolean);
  let current: string = path.sep;
  for (const part of ["", ...parts]) {
    current = part ? path.join(current, part) : current;
    let s: Awaited<ReturnType<typeof stat>>;
    try {
      s = await stat(current);
    } catch {
      return null; // does not exist yet: whoever creates it decides
    }
    if (!s.isDirectory()) continue;
    const bits = s.uid === user.uid ? s.mode >> 6 : s.gid === user.gid ? s.mode >> 3 : s.mode;
    if ((bits & 0o1) === 0) return current;
  }
  return null;
}

/**
 * Binaries the postgres user can run: the installed ones when it reaches them, otherwise a
 * copy in SHARED_DIR (made once per version). Returns them and what was done, for the log.
 */
export async function binariesFor(
  installed: PostgresBinaries,
  user: { uid: number; gid: number },
): Promise<{ binaries: PostgresBinaries; note: string | null }> {
  const blocked = await firstBlockedFolder(installed.root, user);
  if (!blocked) return { binaries: installed, note: null };
  const copy = path.join(SHARED_DIR, `postgres-${installed.version}`);
  const marker = path.join(copy, ".complete");
  const done = await stat(marker).then(
    () => true,
    () => false,
  );
  if (!done) {
    await ensureSharedDir(".");
    const temp = `${copy}.${process.pid}.tmp`;
    await rm(temp, { recursive: true, force: true });
    await cp(installed.root, temp, { recursive: true, verbatimSymlinks: true });
    await writeFile(path.join(temp, ".complete"), `${installed.root}\n`);
    await rm(copy, { recursive: true, force: true });
    await rename(temp, copy);
  }
  return {
    binaries: { root: copy, version: installed.version },
    note: `the postgres user cannot enter ${blocked}, where the PostgreSQL binaries are installed: using a copy in ${copy}`,
  };
}

/** hookrelay's own shared folder, enterable by the postgres user (created if missing). */
async function ensureSharedDir(sub: string): Promise<string> {
  const dir = path.join(SHARED_DIR, sub);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  for (const d of [SHARED_DIR, dir]) {
    if (((await stat(d)).mode & 0o005) !== 0o005) await chmod(d, 0o755);
  }
  return dir;
}

/** Where the cluster of `dataDir` lives when the postgres user cannot reach `dataDir`. */
export async function sharedClusterDir(dataDir: string): Promise<string> {
  const id = createHash("sha256").update(path.resolve(dataDir)).digest("hex").slice(0, 16);
  return path.join(await ensureSharedDir("clusters"), id);
}
