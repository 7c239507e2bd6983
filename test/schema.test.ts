import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, expect, test } from "vitest";
import { loadMigrations, migrate, SchemaTooNewError } from "../src/db/migrate.ts";
import { schemaSnapshot } from "../src/db/schema-snapshot.ts";
import { releaseLostClaims } from "../src/queue/release-deliveries.ts";
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

test("migration 0007 keeps the leases of rows in flight under the old rules, and they come back through the claims table", async () => {
  const old = await createTestDb({ template: false });
  try {
    const migrations = await loadMigrations();
    for (const m of migrations.filter((m) => m.id < 7)) await old.pool.query(m.sql);
    const token = randomUUID();
    await old.pool.query(`
      insert into applications (id, name) values ('app_1', 'a');
      insert into endpoints (id, app_id, url) values ('ep_1', 'app_1', 'http://127.0.0.1:9/x');
      insert into messages (id, app_id, event_type, payload)
      select 'msg_' || i, 'app_1', 't', '{}' from generate_series(1, 3) i;
      -- leased until an hour from now under the old rules (the lease was next_attempt_at)
      insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, next_attempt_at, claim_token, claimed_by)
      values ('msg_1', 'ep_1', 'app_1', 'in_flight', 5, now() + interval '1 hour', '${token}', 'old-worker');
      insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts)
      values ('msg_2', 'ep_1', 'app_1', 'pending', 5);
      -- in flight without a token: nothing could ever hand it back
      insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, attempt_count, next_attempt_at)
      values ('msg_3', 'ep_1', 'app_1', 'in_flight', 5, 1, now() + interval '1 hour');
      update endpoint_health set in_flight = 2;`);
    for (const m of migrations.filter((m) => m.id === 7)) await old.pool.query(m.sql);

    const { rows: claims } = await old.pool.query(
      "select token, worker_id, delivery_ids, lease_expires_at > now() + interval '59 minutes' as kept from claims",
    );
    const { rows: leased } = await old.pool.query(
      "select id from deliveries where message_id = 'msg_1'",
    );
    expect(claims).toEqual([
      { token, worker_id: "old-worker", delivery_ids: [String(leased[0].id)], kept: true },
    ]);
    const { rows } = await old.pool.query(
      "select message_id, status, queued, dead_lettered from deliveries order by message_id",
    );
    expect(rows).toEqual([
      { message_id: "msg_1", status: "in_flight", queued: true, dead_lettered: false },
      { message_id: "msg_2", status: "pending", queued: true, dead_lettered: false },
      { message_id: "msg_3", status: "failed", queued: true, dead_lettered: false },
    ]);

    // Once its lease has run out, the old claim's row is handed back like any other (by
    // today's hand-back, which reads the later migrations' columns too).
    for (const m of migrations.filter((m) => m.id > 7)) await old.pool.query(m.sql);
    await old.pool.query("update claims set lease_expires_at = now() - interval '1 second'");
    expect(await releaseLostClaims(old.pool, { checkOwners: true })).toBe(1);
    const { rows: after } = await old.pool.query(
      "select (select status from deliveries where message_id = 'msg_1') as status, (select count(*)::int from claims) as claims",
    );
    expect(after[0]).toEqual({ status: "pending", claims: 0 });
  } finally {
    await old.drop();
  }
});

test("migrate on an up-to-date database is a no-op; one a newer hookrelay migrated is refused, unchanged", async () => {
  const latest = (await loadMigrations()).at(-1)!;
  const before = await schemaSnapshot(db.pool);
  expect(await migrate(db.pool)).toEqual([]);
  expect(await schemaSnapshot(db.pool)).toBe(before);

  const future = [`${String(latest.id + 1).padStart(4, "0")}_from_the_future.sql`];
  future.push(`${String(latest.id + 2).padStart(4, "0")}_further_still.sql`);
  await db.pool.query("insert into hookrelay_migrations (id, name) values ($1, $2), ($3, $4)", [
    latest.id + 1,
    future[0],
    latest.id + 2,
    future[1],
  ]);
  try {
    const refused = await migrate(db.pool).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(SchemaTooNewError);
    expect(refused).toMatchObject({ code: "schema_too_new", unknown: future });
    const message = (refused as Error).message;
    for (const name of [...future, latest.name]) expect(message).toContain(name);
    expect(message).toMatch(/upgrade hookrelay/i);
    expect(message).toContain("nothing was changed");
    expect(await schemaSnapshot(db.pool)).toBe(before);
  } finally {
    await db.pool.query("delete from hookrelay_migrations where id > $1", [latest.id]);
  }
  expect(await migrate(db.pool)).toEqual([]);
});

test("a refused database gets none of the migrations it lacks", async () => {
  // An empty database that only records a migration from the future (a contrived state:
  // it shows that the refusal comes before the first migration is applied).
  const empty = await createTestDb({ template: false });
  try {
    await empty.pool.query(`
      create table hookrelay_migrations (
        id integer primary key, name text not null, applied_at timestamptz not null default now());
      insert into hookrelay_migrations (id, name) values (1000, '1000_unknown.sql');`);
    await expect(migrate(empty.pool)).rejects.toThrow(/1000_unknown\.sql/);
    const { rows } = await empty.pool.query(
      `select (select count(*)::int from hookrelay_migrations) as recorded,
              to_regclass('public.applications') is null as untouched`,
    );
    expect(rows[0]).toEqual({ recorded: 1, untouched: true });
  } finally {
    await empty.drop();
  }
});
