/**
 * queryWithLocalSettings (src/db/local-settings.ts), the claim's way of turning JIT off and
 * the result write's of using its generic plan, each in one round trip, on the suite's
 * PostgreSQL: the statement itself runs with jit off (it reads the setting), a named one is
 * planned generically from its first run (pg_prepared_statements counts the plans), the
 * caller gets its rows alone, the setting ends with the statement's
 * implicit transaction (the pool's one connection reads jit on again), a named statement
 * is parsed once, an error rejects as any query's does, and a pool with statement names off
 * sends it unnamed. That PostgreSQL then compiles nothing is test/claim-jit.test.ts's
 * (it needs LLVM).
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { GENERIC_PLAN, queryWithLocalSettings, WITHOUT_JIT } from "../src/db/local-settings.ts";
import { makePool, type Pool } from "../src/db/pool.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

let db: TestDb;
let named: Pool;
let unnamed: Pool;
beforeAll(async () => {
  db = await createTestDb({ template: false });
  named = makePool({ connectionString: db.url, max: 1 });
  unnamed = makePool({ connectionString: db.url, max: 1, preparedStatements: false });
});
afterAll(async () => {
  await named?.end();
  await unnamed?.end();
  await db?.drop();
});

const READS_JIT =
  "select current_setting('jit') as jit, $1::int as n from generate_series(1, $1::int)";

const jitNow = async (pool: Pool) =>
  (await pool.query("select current_setting('jit') as jit")).rows[0].jit;

test("the statement runs with jit off, its rows alone come back, and jit is on again after it", async () => {
  expect(await jitNow(named)).toBe("on");
  for (let i = 0; i < 3; i++) {
    const result = await queryWithLocalSettings(named, WITHOUT_JIT, {
      name: "without_jit_test",
      text: READS_JIT,
      values: [3],
    });
    expect(result.rows).toEqual([
      { jit: "off", n: 3 },
      { jit: "off", n: 3 },
      { jit: "off", n: 3 },
    ]);
    expect(result.command).toBe("SELECT");
    expect(result.rowCount).toBe(3);
    expect(await jitNow(named)).toBe("on");
  }
  // prepared once on the pool's one connection, as any named statement
  const { rows } = await named.query(
    "select count(*)::int as n from pg_prepared_statements where name = 'without_jit_test'",
  );
  expect(rows[0].n).toBe(1);
});

test("an error rejects with PostgreSQL's error, and the pool goes on with jit on", async () => {
  await expect(
    queryWithLocalSettings(named, WITHOUT_JIT, {
      name: "without_jit_divides",
      text: "select 1 / $1::int as x",
      values: [0],
    }),
  ).rejects.toMatchObject({ code: "22012" });
  expect(await jitNow(named)).toBe("on");
  const again = await queryWithLocalSettings(named, WITHOUT_JIT, {
    name: "without_jit_divides",
    text: "select 1 / $1::int as x",
    values: [1],
  });
  expect(again.rows).toEqual([{ x: 1 }]);
});

test("a pool with statement names off sends it unnamed", async () => {
  const result = await queryWithLocalSettings(unnamed, WITHOUT_JIT, {
    name: "without_jit_unnamed",
    text: READS_JIT,
    values: [1],
  });
  expect(result.rows).toEqual([{ jit: "off", n: 1 }]);
  const { rows } = await unnamed.query(
    "select count(*)::int as n from pg_prepared_statements where name = 'without_jit_unnamed'",
  );
  expect(rows[0].n).toBe(0);
  expect(await jitNow(unnamed)).toBe("on");
});

test("a statement without parameters is refused (pg would send it as a simple query)", async () => {
  await expect(queryWithLocalSettings(named, WITHOUT_JIT, { text: "select 1" })).rejects.toThrow(
    /parameters/,
  );
});

test("a named statement run with GENERIC_PLAN is planned once, generically, from its first run", async () => {
  const text = "select current_setting('plan_cache_mode') as mode, $1::int as n";
  for (let i = 0; i < 3; i++) {
    const result = await queryWithLocalSettings(named, GENERIC_PLAN, {
      name: "generic_plan_test",
      text,
      values: [i],
    });
    expect(result.rows).toEqual([{ mode: "force_generic_plan", n: i }]);
  }
  // the same statement without it: custom plans, as PostgreSQL makes a statement's first five
  for (let i = 0; i < 2; i++) await named.query({ name: "custom_plan_test", text, values: [i] });
  const { rows } = await named.query(
    `select name, generic_plans::int as generic, custom_plans::int as custom
     from pg_prepared_statements where name in ('generic_plan_test', 'custom_plan_test')
     order by name`,
  );
  expect(rows).toEqual([
    { name: "custom_plan_test", generic: 0, custom: 2 },
    { name: "generic_plan_test", generic: 3, custom: 0 },
  ]);
  expect((await named.query("select current_setting('plan_cache_mode') as m")).rows[0].m).toBe(
    "auto",
  );
});

test("both settings at once", async () => {
  const result = await queryWithLocalSettings(
    named,
    { ...WITHOUT_JIT, ...GENERIC_PLAN },
    {
      text: "select current_setting('jit') as jit, current_setting('plan_cache_mode') as mode, $1::int as n",
      values: [7],
    },
  );
  expect(result.rows).toEqual([{ jit: "off", mode: "force_generic_plan", n: 7 }]);
});
