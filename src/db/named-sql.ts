/**
 * SQL with named parameters. A statement writes `$name` where PostgreSQL wants `$1`, each
 * followed by its explicit cast as usual (`$claimToken::uuid`), and is bound from an object
 * of the same names. A fragment composed into a statement from another module names the
 * parameters it reads, so nothing has to count positions from an offset that must line up
 * across files.
 *
 * The text is compiled once, when the module defining the statement loads: `$name` becomes
 * `$1`, `$2`, ... in order of first appearance (a name used twice is one parameter), so the
 * driver and PostgreSQL see an ordinary parameterized statement. Binding checks both ways:
 * a name without a value, or a value no name reads, throws.
 *
 * Quoted strings, quoted identifiers and comments are skipped. Positional `$1` and
 * dollar-quoted strings are refused: one statement, one way of writing parameters.
 */

export interface NamedSql<P extends object> {
  /** the statement as PostgreSQL receives it, with `$1..$n` */
  readonly text: string;
  /** the parameter names, in `$n` order */
  readonly names: readonly string[];
  /** the values in `$n` order */
  values(params: P): unknown[];
  /** a node-postgres query config (`name` set: prepared once per connection) */
  query(params: P): { name?: string; text: string; values: unknown[] };
}

const NAME_START = /[A-Za-z_]/;
const NAME_PART = /[A-Za-z0-9_]/;

/** Compiles `text` (see the module comment); `name` makes it a named prepared statement. */
export function namedSql<P extends object>(text: string, name?: string): NamedSql<P> {
  const { compiled, names } = compile(text);
  const known = new Set(names);
  const values = (params: P): unknown[] => {
    const record = params as Record<string, unknown>;
    for (const key in record) {
      if (!known.has(key)) throw new Error(`SQL parameter ${key} is not used by the statement`);
    }
    return names.map((n) => {
      const v = record[n];
      if (v === undefined) throw new Error(`SQL parameter ${n} has no value`);
      return v;
    });
  };
  return {
    text: compiled,
    names,
    values,
    query: (params) =>
      name === undefined
        ? { text: compiled, values: values(params) }
        : { name, text: compiled, values: values(params) },
  };
}

function compile(text: string): { compiled: string; names: string[] } {
  const names: string[] = [];
  const numbers = new Map<string, number>();
  let out = "";
  let i = 0;
  const skipTo = (end: string, from: number): number => {
    const at = text.indexOf(end, from);
    return at < 0 ? text.length : at + end.length;
  };
  while (i < text.length) {
    const c = text[i]!;
    let next = i + 1;
    if (c === "'" || c === '"') {
      // '' and "" inside are two quotes in a row: the scan simply closes and reopens
      next = skipTo(c, i + 1);
    } else if (c === "-" && text[i + 1] === "-") {
      next = skipTo("\n", i + 2);
    } else if (c === "/" && text[i + 1] === "*") {
      next = skipTo("*/", i + 2);
    } else if (c === "$") {
      const after = text[i + 1] ?? "";
      if (!NAME_START.test(after)) {
        throw new Error(
          `SQL at ${i}: only named parameters ($name) are allowed, found "$${after}"`,
        );
      }
      next = i + 1;
      while (next < text.length && NAME_PART.test(text[next]!)) next++;
      if (text[next] === "$")
        throw new Error(`SQL at ${i}: dollar-quoted strings are not supported`);
      const name = text.slice(i + 1, next);
      let n = numbers.get(name);
      if (n === undefined) {
        names.push(name);
        n = names.length;
        numbers.set(name, n);
      }
      out += `$${n}`;
      i = next;
      continue;
    }
    out += text.slice(i, next);
    i = next;
  }
  return { compiled: out, names };
}
