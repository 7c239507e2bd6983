/** Human tables and `--json` for scripts; exit codes that mean something. */
import { cliIo } from "./io.ts";

export const ExitCode = {
  ok: 0,
  /** the command failed (bad input, not found, database unreachable) */
  error: 1,
  /** `alerts`: at least one critical alert is open */
  critical: 3,
} as const;

export interface OutputOptions {
  json?: boolean;
}

type Cell = string | number | boolean | null | undefined;

/** A plain-text table: a header row, then one row per item, columns padded. */
export function table(headers: string[], rows: Cell[][]): string {
  const text = rows.map((r) => r.map((c) => (c === null || c === undefined ? "-" : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  return [line(headers), line(widths.map((w) => "-".repeat(w))), ...text.map(line)].join("\n");
}

/** Prints `data` as JSON (`--json`) or as the human rendering. */
export function print(options: OutputOptions, data: unknown, human: () => string): void {
  cliIo().stdout.write(`${options.json ? JSON.stringify(data, null, 2) : human()}\n`);
}

/** Milliseconds as a short human duration. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "-";
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}
