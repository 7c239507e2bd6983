/**
 * The Debian packages of the failover scenario (docs/reliability.md, Failover (Patroni)):
 * `patroni`, `etcd-server` and `haproxy`, installed with apt-get when a command is missing,
 * with one line saying so. An install may start a system-wide etcd on 2379 (where services
 * start at all: containers usually forbid it through policy-rc.d); the scenario never uses
 * it, since its own etcd, Patroni and haproxy listen on free ports of their own.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const exec = promisify(execFile);

const NEEDED: { command: string; pkg: string }[] = [
  { command: "patroni", pkg: "patroni" },
  { command: "etcd", pkg: "etcd-server" },
  { command: "haproxy", pkg: "haproxy" },
];

async function has(command: string, pkg: string): Promise<boolean> {
  const onPath = await exec("sh", ["-c", `command -v ${command}`]).then(
    () => true,
    () => false,
  );
  if (!onPath) return false;
  return exec("dpkg", ["-s", pkg]).then(
    ({ stdout }) => stdout.includes("Status: install ok installed"),
    // not a dpkg system, or not from a package: what is on PATH will do
    () => true,
  );
}

/** Installs what is missing; resolves to the packages installed (empty when none were). */
export async function ensureHaPackages(log: (line: string) => void): Promise<string[]> {
  const missing: string[] = [];
  for (const n of NEEDED) if (!(await has(n.command, n.pkg))) missing.push(n.pkg);
  if (missing.length === 0) return [];
  log(`installing ${missing.join(" ")} with apt-get (missing)`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  try {
    await exec("apt-get", ["update", "-qq"], { env, maxBuffer: 64 << 20 });
    await exec("apt-get", ["install", "-y", "-qq", ...missing], { env, maxBuffer: 64 << 20 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`apt-get install ${missing.join(" ")} failed: ${e.stderr || e.message}`);
  }
  return missing;
}
