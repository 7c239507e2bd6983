/**
 * The command-line options every fault scenario shares: `--size small|full` picks a preset,
 * `--details` asks for more output, `--help` prints the scenario's help, and each numeric
 * flag overrides one field of the preset (checked against its lower bound).
 */
import { parseArgs } from "node:util";

export type Size = "small" | "full";

/** a numeric flag: the preset field it sets and the smallest value it accepts */
export interface NumericFlag<T> {
  key: keyof T & string;
  min: number;
}

export function parseSizedOptions<T extends Record<string, number>>(
  argv: string[],
  scenario: { sizes: Record<Size, T>; help: string; flags: Record<string, NumericFlag<T>> },
): T & { size: Size; details: boolean } {
  const numeric = Object.fromEntries(
    Object.keys(scenario.flags).map((flag) => [flag, { type: "string" as const }]),
  );
  const { values } = parseArgs({
    args: argv,
    options: {
      size: { type: "string", default: "small" },
      help: { type: "boolean", default: false },
      details: { type: "boolean", default: false },
      ...numeric,
    },
  });
  if (values.help) {
    process.stdout.write(scenario.help);
    process.exit(0);
  }
  const size = values.size;
  if (size !== "small" && size !== "full") throw new Error(`--size is small or full, not ${size}`);
  const preset: Record<string, number> = { ...scenario.sizes[size] };
  for (const [flag, { key, min }] of Object.entries(scenario.flags)) {
    const raw = (values as Record<string, unknown>)[flag];
    if (typeof raw !== "string") continue;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min) throw new Error(`--${flag} must be a number >= ${min}`);
    preset[key] = n;
  }
  return { ...(preset as T), size, details: values.details === true };
}
