/**
 * The array literals the result write sends must reach PostgreSQL as exactly the values they
 * were built from: checked by a round trip through the server's own array parser, with the
 * values that need escaping and the ones that look like something else (NULL, braces,
 * commas, quotes, backslashes, blanks).
 */
import pg from "pg";
import { afterAll, beforeAll, expect, inject, test } from "vitest";
import { plainArray, textArray, timestampArray } from "../src/db/array-literal.ts";

let client: pg.Client;

beforeAll(async () => {
  client = new pg.Client({ connectionString: inject("pgAdminUrl") });
  await client.connect();
});

afterAll(async () => {
  await client.end();
});

async function roundTrip(literal: string, type: string): Promise<unknown[]> {
  const { rows } = await client.query(`select $1::${type}[] as a`, [literal]);
  return rows[0].a;
}

const AWKWARD = [
  "plain",
  "",
  " ",
  "NULL",
  "null",
  'say "hi"',
  "back\\slash",
  'both \\" at once\\',
  "{braces}",
  "a,b",
  "tab\tand\nnewline",
  "ünïcödé ✓",
];

test("text arrays survive the server's parser, escaped or not", async () => {
  expect(await roundTrip(textArray(AWKWARD), "text")).toEqual(AWKWARD);
  expect(await roundTrip(textArray(["a", null, 'q"', null]), "text")).toEqual([
    "a",
    null,
    'q"',
    null,
  ]);
  expect(await roundTrip(textArray(["x", "y z", "NULL"]), "text")).toEqual(["x", "y z", "NULL"]);
  expect(await roundTrip(textArray([null]), "text")).toEqual([null]);
  expect(await roundTrip(textArray([]), "text")).toEqual([]);
});

test("numeric and boolean arrays, with and without nulls", async () => {
  expect(await roundTrip(plainArray([1, 0, -5, 2 ** 40]), "bigint")).toEqual([
    "1",
    "0",
    "-5",
    String(2 ** 40),
  ]);
  expect(await roundTrip(plainArray([200, null, 503]), "integer")).toEqual([200, null, 503]);
  expect(await roundTrip(plainArray([true, false, null]), "boolean")).toEqual([true, false, null]);
  expect(await roundTrip(plainArray([]), "integer")).toEqual([]);
});

test("an undefined that slipped past the types becomes NULL, not an empty string", async () => {
  const slipped = [undefined, "x"] as unknown as string[];
  expect(await roundTrip(textArray(slipped), "text")).toEqual([null, "x"]);
  expect(await roundTrip(plainArray([1, undefined] as unknown as number[]), "integer")).toEqual([
    1,
    null,
  ]);
});

test("timestamps keep their millisecond, whatever the session's time zone", async () => {
  await client.query("set time zone 'America/St_Johns'");
  const dates = [new Date("2026-12-03T07:40:12.345Z"), null, new Date(0)];
  const back = (await roundTrip(timestampArray(dates), "timestamptz")) as (Date | null)[];
  expect(back.map((d) => d?.getTime() ?? null)).toEqual(dates.map((d) => d?.getTime() ?? null));
});
