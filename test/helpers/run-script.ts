/** Runs one of the project's Node scripts (bin/faults.js, the CLI) to its end, collecting its output. */
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

export interface ScriptRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `node ...nodeArgs <script> ...args` from the checkout's root; `script` is relative to it. */
export function runScript(
  script: string,
  args: string[],
  nodeArgs: string[] = [],
): Promise<ScriptRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, script), ...args], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString("utf8");
    });
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString("utf8");
    });
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}
