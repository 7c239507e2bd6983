/**
 * Where the embedded cluster keeps what a client needs to reach it: the password in
 * `<dataDir>/embedded.json` (0600) and, while it runs, the port in PostgreSQL's own
 * `<dataDir>/pg/postmaster.pid`. File access only, so `hookrelay db-url` can read it
 * without loading the database packages.
 */
import { readFile } from "node:fs/promises";
import path from "node:path";

export const EMBEDDED_USER = "postgres";
export const EMBEDDED_DATABASE = "hookrelay";

export interface EmbeddedState {
  password: string;
}

export const clusterDirOf = (dataDir: string) => path.join(dataDir, "pg");
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

/** The port of the cluster in `clusterDir` if its postmaster is alive, else undefined. */
export async function runningPort(clusterDir: string): Promise<number | undefined> {
  let lines: string[];
  try {
    lines = (await readFile(path.join(clusterDir, "postmaster.pid"), "utf8")).split("\n");
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: alive but owned by the postgres user, which is the root case.
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return undefined;
  }
  return port;
}

export function embeddedUrl(state: EmbeddedState, port: number, database = EMBEDDED_DATABASE) {
  return `postgres://${EMBEDDED_USER}:${encodeURIComponent(state.password)}@127.0.0.1:${port}/${database}`;
}

/** A connection string with its password replaced by asterisks, for logs and banners. */
export function maskPassword(connectionString: string): string {
  try {
    const url = new URL(connectionString);
    if (url.password) url.password = "****";
    return url.toString();
  } catch {
    return connectionString.replace(/\/\/([^:/@]+):[^@]*@/, "//$1:****@");
  }
}
