import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { schemaSnapshot } from "../src/db/schema-snapshot.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { SNAPSHOT_FILE } from "./helpers/dump-schema.ts";

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(() => db.drop());

test("migrations produce the schema in test/schema.sql (regenerate: npm run schema:dump)", async () => {
  expect(await schemaSnapshot(db.pool)).toBe(await readFile(SNAPSHOT_FILE, "utf8"));
});
