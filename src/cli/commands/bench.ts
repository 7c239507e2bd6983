/**
 * bench: runs the repository's benchmark (bench/, docs/performance.md). It compares
 * hookrelay with pg-boss and a raw HTTP ceiling, so it needs the development checkout
 * and its devDependencies; an installed package says so instead.
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { ConfigError } from "../../errors.ts";
import { setExitCode } from "../io.ts";

// src/cli/commands and dist/cli/commands are both three levels below the package root.
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const ENTRY = `${ROOT}bin/bench.js`;

export function registerBenchCommand(program: Command): void {
  program
    .command("bench")
    .description(
      "run the benchmark (from a clone of the repository); options: npm run bench -- --help",
    )
    .allowUnknownOption()
    .helpOption(false)
    .argument("[options...]", "passed to the benchmark, e.g. --quick, --runs 1")
    .action(async (args: string[]) => {
      if (!existsSync(ENTRY) || !existsSync(`${ROOT}node_modules/tsx`)) {
        throw new ConfigError(
          "the benchmark ships with the source repository, not the package: clone it, run npm ci, then npx hookrelay bench",
        );
      }
      const child = spawn(process.execPath, [ENTRY, ...args], { cwd: ROOT, stdio: "inherit" });
      const code = await new Promise<number>((resolve) =>
        child.on("close", (c, signal) => resolve(c ?? (signal ? 130 : 1))),
      );
      setExitCode(code);
    });
}
