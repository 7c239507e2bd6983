/**
 * Migration 0014's public-id secret and its SQL twin of makePublicIds().format
 * (hookrelay_public_id, used where SQL writes ids into payloads): equal to the TypeScript
 * ids over many keys, and the secret is random per installation.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { migrate } from "../src/db/migrate.ts";
import { PUBLIC_ID_PREFIX, type PublicIdKind } from "../src/ids-public.ts";
import { publicIdsOf } from "../src/ids-public-key.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(() => db.drop());

/** 0, 1, the 32-bit edges, 2^53 - 1, a run of consecutive keys and a spread of random ones. */
function sampleKeys(): number[] {
  const keys = [0, 1, 2, 61, 62, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1];
  keys.push(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER - 1);
  for (let n = 1_000; n < 1_300; n++) keys.push(n);
  for (let i = 0; i < 300; i++) keys.push(Math.floor(Math.random() * Number.MAX_SAFE_INTEGER));
  return keys;
}

test("hookrelay_public_id() in SQL gives exactly the ids TypeScript shows, for both kinds", async () => {
  const ids = await publicIdsOf(db.pool);
  const keys = sampleKeys();
  for (const kind of ["delivery", "attempt"] as PublicIdKind[]) {
    const { rows } = await db.pool.query<{ id: string }>(
      `select hookrelay_public_id($1::text, n) as id
       from unnest($2::bigint[]) with ordinality as k(n, i) order by i`,
      [PUBLIC_ID_PREFIX[kind], keys],
    );
    expect(rows.map((r) => r.id)).toEqual(keys.map((n) => ids.format(kind, n)));
  }
});

test("SQL ids of keys past 2^53 (which TypeScript never holds) have the same shape", async () => {
  const { rows } = await db.pool.query<{ id: string }>(
    "select hookrelay_public_id('dlv_', 9223372036854775807) as id",
  );
  expect(rows[0]!.id).toMatch(/^dlv_[A-V][0-9A-Za-z]{10}$/);
});

test("the migration writes one random 32-byte secret: another installation gets another", async () => {
  const { rows } = await db.pool.query(
    "select length(secret) as len, legacy_delivery_max, legacy_attempt_max from public_id_key",
  );
  // migrated empty (the test template): no id was ever shown in the old form
  expect(rows).toEqual([{ len: 32, legacy_delivery_max: 0, legacy_attempt_max: 0 }]);
  const other = await createTestDb({ template: false });
  try {
    await migrate(other.pool);
    const secretOf = async (d: TestDb) =>
      (await d.pool.query("select encode(secret, 'hex') as s from public_id_key")).rows[0].s;
    expect(await secretOf(other)).not.toBe(await secretOf(db));
    expect((await publicIdsOf(other.pool)).format("delivery", 17)).not.toBe(
      (await publicIdsOf(db.pool)).format("delivery", 17),
    );
  } finally {
    await other.drop();
  }
});
