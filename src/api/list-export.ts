/**
 * A filtered listing exported as CSV or JSON (docs/browse.md, "Export"): streamed, a batch
 * of rows at a time through the listing's own keyset query, so memory stays flat whatever
 * the table holds; bounded by a row cap, and the export says when it was cut there.
 *
 *   CSV   a header line, a line per row; cut: a last line "# truncated: ..."
 *   JSON  {"data":[...],"truncated":false,"maxRows":100000}, written as it goes
 */
import { Readable } from "node:stream";

/** The most rows one export holds (its `max_rows` may ask for fewer). */
export const EXPORT_MAX_ROWS = 100_000;

/** Rows fetched per query: big enough to amortise a round trip, small in memory. */
const BATCH = 1_000;

export const exportQuerySchema = {
  format: { type: "string", enum: ["csv", "json"], default: "csv" },
  max_rows: { type: "integer", minimum: 1, maximum: EXPORT_MAX_ROWS, default: EXPORT_MAX_ROWS },
} as const;

/**
 * An export route's answer in the OpenAPI document. The stream is sent as it is: this
 * documents it and serializes nothing.
 */
export const exportResponseSchema = {
  200: {
    description: "The export: CSV (the default) or JSON.",
    content: {
      "text/csv": { schema: { type: "string" } },
      "application/json": {
        schema: {
          type: "object",
          properties: {
            data: { type: "array", items: { type: "object", additionalProperties: true } },
            truncated: { type: "boolean" },
            maxRows: { type: "integer" },
          },
        },
      },
    },
  },
} as const;

export interface ExportQuery {
  format: "csv" | "json";
  max_rows: number;
}

export interface ExportSpec<R> {
  format: "csv" | "json";
  maxRows: number;
  /** the CSV header, in the order `csvRow` writes the cells */
  columns: readonly string[];
  /** up to `limit` rows after `cursor` (null: from the start), in the listing's order */
  fetch(cursor: R | null, limit: number): Promise<R[]>;
  /** whatever extra a batch needs (a status per row), fetched once per batch */
  csvRow(row: R): readonly (string | number | null)[];
  /** the row as JSON text */
  jsonRow(row: R): string;
  /** called once per batch before its rows are written */
  prepare?(rows: readonly R[]): Promise<void>;
}

/**
 * A cell as CSV writes it: quoted when it holds a comma, quote or line break; a text that
 * a spreadsheet would run as a formula (=, +, -, @ first) gets a leading apostrophe.
 */
export function csvCell(value: string | number | null): string {
  if (value === null) return "";
  if (typeof value === "number") return String(value);
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

const csvLine = (cells: readonly (string | number | null)[]) =>
  `${cells.map(csvCell).join(",")}\r\n`;

/** The export as a stream of text; it pulls the next batch only when the reader wants it. */
export function exportStream<R>(spec: ExportSpec<R>): Readable {
  async function* lines(): AsyncGenerator<string> {
    const csv = spec.format === "csv";
    yield csv ? csvLine(spec.columns) : '{"data":[';
    let written = 0;
    let cursor: R | null = null;
    let truncated = false;
    for (;;) {
      const remaining = spec.maxRows - written;
      // one row past the cap tells a cut export from one that ends there
      const limit = Math.min(BATCH, remaining + 1);
      const rows = await spec.fetch(cursor, limit);
      const kept = rows.length > remaining ? rows.slice(0, remaining) : rows;
      truncated = rows.length > remaining;
      if (kept.length > 0) {
        await spec.prepare?.(kept);
        let chunk = "";
        for (const r of kept) {
          chunk += csv ? csvLine(spec.csvRow(r)) : `${written > 0 ? "," : ""}${spec.jsonRow(r)}`;
          written++;
        }
        yield chunk;
      }
      if (truncated || rows.length < limit) break;
      cursor = rows[rows.length - 1] ?? null;
    }
    if (csv) {
      if (truncated)
        yield `# truncated: more rows match than the export's cap of ${spec.maxRows}; narrow the filters (before, after) to export the rest\r\n`;
    } else {
      yield `],"truncated":${truncated},"maxRows":${spec.maxRows}}`;
    }
  }
  return Readable.from(lines(), { objectMode: false });
}
