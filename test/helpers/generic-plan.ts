/**
 * A hot-path statement's plan as the worker runs it: the statement captured from the code
 * that sends it (not run), then prepared and explained with its generic plan in a
 * transaction rolled back.
 */
import { GENERIC_PLAN, type LocalSettings } from "../../src/db/local-settings.ts";
import type { Pool, Queryable } from "../../src/db/pool.ts";

export interface Statement {
  text: string;
  values: unknown[];
}

/**
 * The last statement `send` sends through a recorder that runs nothing and answers each
 * query with `rows`.
 */
export async function captureStatement(
  send: (recorder: Queryable) => Promise<unknown>,
  rows: unknown[] = [],
): Promise<Statement> {
  let sent: Statement | null = null;
  const recorder = {
    query: async (q: Statement) => {
      sent = q;
      return { rows };
    },
  } as unknown as Queryable;
  await send(recorder);
  if (sent === null) throw new Error("nothing was sent");
  return sent;
}

/**
 * `EXPLAIN (ANALYZE)` of `statement` prepared and run with its generic plan, under
 * `settings` (default: the generic plan alone), in a transaction rolled back; the plan's text.
 */
export async function explainGeneric(
  pool: Pool,
  statement: Statement,
  settings: LocalSettings = GENERIC_PLAN,
): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    for (const [name, value] of Object.entries(settings))
      await client.query("select set_config($1, $2, true)", [name, value]);
    await client.query(`prepare explained_statement as ${statement.text}`);
    const args = executeArguments(client, statement.values);
    const explained = await client.query(
      `explain (analyze, costs off, timing off, summary off) execute explained_statement(${args})`,
    );
    return explained.rows.map((r) => r["QUERY PLAN"]).join("\n");
  } finally {
    await client.query("rollback");
    await client.query("deallocate all");
    client.release();
  }
}

/**
 * A statement's values as the arguments of an EXECUTE (which takes no parameters of its
 * own): SQL literals, a Date in ISO form, an array as PostgreSQL's array literal.
 */
export function executeArguments(
  client: { escapeLiteral(text: string): string },
  values: readonly unknown[],
): string {
  return values
    .map((v) =>
      v === null || v === undefined
        ? "null"
        : client.escapeLiteral(
            v instanceof Date ? v.toISOString() : Array.isArray(v) ? arrayLiteral(v) : String(v),
          ),
    )
    .join(", ");
}

/** An array parameter as PostgreSQL's array literal: each element quoted, null as NULL. */
function arrayLiteral(values: unknown[]): string {
  const element = (e: unknown) =>
    e === null || e === undefined ? "NULL" : `"${String(e).replace(/["\\]/g, "\\$&")}"`;
  return `{${values.map(element).join(",")}}`;
}
