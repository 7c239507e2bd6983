/** Parsers for command-line values; each refuses bad input with a message saying what fits. */
import { readFile } from "node:fs/promises";
import { InvalidArgumentError } from "commander";
import { cliIo } from "./io.ts";

export const list = (v: string) =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);

export const intArg = (v: string): number => {
  const n = Number(v);
  if (v.trim() === "" || !Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError("expected a non-negative integer");
  return n;
};

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** A duration in ms: `500ms`, `15s`, `5m`, `2h`, `1d`, or a plain number of milliseconds. */
export const durationArg = (v: string): number => {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError("expected a duration such as 500ms, 15s, 5m, 2h or 1d");
  const ms = Number(m[1]) * UNIT_MS[(m[2] ?? "ms") as keyof typeof UNIT_MS];
  if (!Number.isSafeInteger(Math.round(ms))) throw new InvalidArgumentError("duration too long");
  return Math.round(ms);
};

/** Milliseconds in the largest unit that writes them exactly: 100ms, 15s, 5m, 1d. */
export function durationText(ms: number): string {
  for (const [unit, size] of [
    ["d", UNIT_MS.d],
    ["h", UNIT_MS.h],
    ["m", UNIT_MS.m],
    ["s", UNIT_MS.s],
  ] as const)
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/**
 * `parse`, then the bounds the server takes (inclusive; for the endpoint policy they are
 * domain/endpoint-policy.ts's, the API's schema): a value the server would refuse fails here.
 */
export const boundedArg =
  (parse: (v: string) => number, min: number, max: number, show: (n: number) => string) =>
  (v: string): number => {
    const n = parse(v);
    if (n < min || n > max)
      throw new InvalidArgumentError(
        `expected ${show(min)} to ${show(max)} (the server's bounds), got ${show(n)}`,
      );
    return n;
  };

/** The API's page size bounds (api/pagination.ts: 1..MAX_LIMIT). */
export const PAGE_LIMIT = { min: 1, max: 250 } as const;
/** `--limit`: a page size the API takes. */
export const limitArg = boundedArg(intArg, PAGE_LIMIT.min, PAGE_LIMIT.max, String);

/**
 * For `endpoint update`: `default` clears the setting (back to the server's default). The
 * word itself is kept (commander turns a null into ""); the caller sends null for it.
 */
export const RESET = "default";
export const orDefault =
  <T>(parse: (v: string) => T) =>
  (v: string): T | typeof RESET =>
    v === RESET ? RESET : parse(v);

/** "2h", "30m", "7d" ago, or an ISO timestamp; as an ISO timestamp. */
export const timeArg = (v: string): string => {
  const rel = /^(\d+)([smhd])$/.exec(v);
  if (rel) {
    const unit = UNIT_MS[rel[2] as "s" | "m" | "h" | "d"];
    return new Date(Date.now() - Number(rel[1]) * unit).toISOString();
  }
  const t = Date.parse(v);
  if (Number.isNaN(t))
    throw new InvalidArgumentError("expected an ISO time or an age such as 30m, 2h, 7d");
  return new Date(t).toISOString();
};

/** `name=value`, repeatable: collects into one object. */
export const headerArg = (v: string, previous: Record<string, string> = {}) => {
  const i = v.indexOf("=");
  if (i <= 0) throw new InvalidArgumentError("expected name=value");
  return { ...previous, [v.slice(0, i).trim()]: v.slice(i + 1) };
};

/** A query string from the defined values, with its `?`, or "" when there are none. */
export const qs = (params: Record<string, string | number | boolean | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
};

export const enc = encodeURIComponent;

/** A JSON document from the file, or stdin for `-` or no file. */
export async function readJson(file: string | undefined): Promise<unknown> {
  let text: string;
  if (file && file !== "-") text = await readFile(file, "utf8");
  else {
    const chunks: Buffer[] = [];
    for await (const chunk of cliIo().stdin) chunks.push(Buffer.from(chunk));
    text = Buffer.concat(chunks).toString("utf8");
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InvalidArgumentError(`payload is not valid JSON: ${(err as Error).message}`);
  }
}
