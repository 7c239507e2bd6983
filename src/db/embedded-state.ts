/**
 * Where the embedded cluster keeps what a client needs to reach it: the password in
 * `<dataDir>/embedded.json` (0600) and, while it runs, the port in PostgreSQL's own
 * `postmaster.pid` in the cluster's folder (`<dataDir>/pg` unless embedded.json names another). File access only, so `hookrelay db-url` can read it
 * without loading the database packages.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";

export const EMBEDDED_USER = "postgres";
export const EMBEDDED_DATABASE = "hookrelay";

export interface EmbeddedState {
  password: string;
  /** where the cluster lives when not in `<dataDir>/pg` (root, data folder closed to postgres) */
  clusterDir?: string;
}

/** The cluster's folder: `<dataDir>/pg` unless the state says otherwise. */
export const clusterDirFor = (dataDir: string, state: EmbeddedState | null) =>
  state?.clusterDir ?? path.join(dataDir, "pg");
export const stateFileOf = (dataDir: string) => path.join(dataDir, "embedded.json");

/** The saved state of an initialised cluster, or null before the first start. */
export async function readEmbeddedState(dataDir: string): Promise<EmbeddedState | null> {
  let text: string;
  try {
    text = await readFile(stateFileOf(dataDir), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  return JSON.parse(text) as EmbeddedState;
}

export type PostmasterStatus =
  | { state: "running"; pid: number; port: number }
  /** a postmaster.pid whose process is gone (killed with the machine or by kill -9) */
  | { state: "stale"; pid: number }
  | { state: "none" };

/** What `postmaster.pid` in `clusterDir` says, checked against the process table. */
export async function postmasterStatus(clusterDir: string): Promise<PostmasterStatus> {
  let lines: string[];
  try {
    lines = (await readFile(path.join(clusterDir, "postmaster.pid"), "utf8")).split("\n");
  } catch {
    return { state: "none" };
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !Number.isInteger(port)) return { state: "none" };
  return (await isAlive(pid)) ? { state: "running", pid, port } : { state: "stale", pid };
}

/** The port of the cluster in `clusterDir` if its postmaster is alive, else undefined. */
export async function runningPort(clusterDir: string): Promise<number | undefined> {
  const status = await postmasterStatus(clusterDir);
  return status.state === "running" ? status.port : undefined;
}

/** True for a live process; a zombie (dead, not yet reaped) counts as gone. */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: alive but owned by another user (the postgres user, as root).
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    // /proc/<pid>/stat: "pid (name) state ..."
    const stat = await readFile(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return true; // no /proc (macOS): kill(0) said alive
  }
}

export function embeddedUrl(state: EmbeddedState, port: number, database = EMBEDDED_DATABASE) {
  return `postgres://${EMBEDDED_USER}:${encodeURIComponent(state.password)}@127.0.0.1:${port}/${database}`;
}

/** A connection string with its password replaced by asterisks, for logs and banners. */
export function maskPassword(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password) url.password = "****";
    // a client key's passphrase (docs/database.md, "TLS")
    if (url.searchParams.has("sslpassword")) url.searchParams.set("sslpassword", "****");
    return url.toString();
  } catch {
    return connectionString.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:****@");
  }
}
