/**
 * Least privilege (docs/database.md, "Roles and schema"): the documented scripts make an
 * owner role and a DML-only app role for a named schema; the owner migrates, and the app
 * role runs the API, a worker, a delivery to a real receiver on 127.0.0.1 and every
 * maintenance task without one permission error. A role without rights, a search_path that
 * leads elsewhere and a schema not migrated each get one sentence. The outbox library
 * writes into the schema from a caller whose search_path is public, and leaves it so.
 */
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { loadMigrations, migrate } from "../src/db/migrate.ts";
import { makePool, type Pool } from "../src/db/pool.ts";
import { PrivilegeError, SchemaNotMigratedError } from "../src/db/schema-errors.ts";
import { HookRelay } from "../src/library.ts";
import { silentLogger } from "../src/logger.ts";
import {
  maintenanceTasks,
  makeProcessLogging,
  type Runtime,
  startRuntime,
} from "../src/runtime.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { runCli } from "./helpers/cli.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { testConfig } from "./helpers/harness.ts";
import { linesInto } from "./helpers/log-lines.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import {
  documentedRoleScripts,
  dropRoles,
  ROLE_PASSWORD,
  runSql,
  uniqueRole,
  urlAs,
} from "./helpers/roles.ts";

const SCHEMA = "hookrelay_x";
const ADMIN = "hr_admin_least_privilege_test_key";
const V1 = "/api/v1";

const owner = uniqueRole("hr_owner");
const app = uniqueRole("hr_app");
const noRights = uniqueRole("hr_none");
const roles = [owner, app, noRights];

let db: TestDb;
let receiver: Receiver;
const pools: Pool[] = [];
const runtimes: Runtime[] = [];

const poolAs = (role: string) => {
  const pool = makePool({ connectionString: urlAs(db.url, role), max: 4 });
  pools.push(pool);
  return pool;
};

/** A server's configuration for `role`: API on a free port, a short poll. */
const configAs = (role: string, overrides: Parameters<typeof testConfig>[0] = {}) =>
  testConfig({
    databaseUrl: urlAs(db.url, role),
    dbSchema: SCHEMA,
    host: "127.0.0.1",
    port: 0,
    adminKey: ADMIN,
    dbPoolSize: 4,
    logLevel: "warn",
    ...overrides,
  });

/** startRuntime with its log lines (warn and up) kept. */
async function start(config: ReturnType<typeof testConfig>, lines: string[] = []) {
  const destination = linesInto(lines);
  const runtime = await startRuntime(
    config,
    { api: true, worker: true },
    makeProcessLogging(config, destination),
  );
  runtimes.push(runtime);
  return runtime;
}

/** The error startRuntime rejects with. */
async function startFails(config: ReturnType<typeof testConfig>): Promise<Error> {
  const err = await startRuntime(
    config,
    { api: true, worker: true },
    { logger: silentLogger, redactor: makeRedactor() },
  ).then(
    (rt) => {
      runtimes.push(rt);
      throw new Error("started");
    },
    (e: Error) => e,
  );
  return err;
}

async function api(rt: Runtime, method: string, path: string, body?: unknown) {
  const res = await fetch(`${rt.apiUrl}${V1}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: response JSON, asserted field by field
  return { status: res.status, body: (await res.json()) as any };
}

beforeAll(async () => {
  db = await createTestDb({ template: false });
  receiver = await startReceiver(() => ({ status: 204 }));
  const scripts = documentedRoleScripts({ owner, app, schema: SCHEMA });
  await runSql(db.url, scripts.admin);
  await runSql(urlAs(db.url, owner), scripts.owner);
  await runSql(
    db.url,
    `create role ${noRights} login password '${ROLE_PASSWORD}';
    grant usage on schema ${SCHEMA} to ${noRights};
    alter role ${noRights} set search_path = ${SCHEMA};`,
  );
});

afterAll(async () => {
  for (const rt of runtimes) await rt.stop();
  for (const p of pools) await p.end();
  await receiver?.close();
  await db?.drop();
  await dropRoles(roles);
});

describe("the owner migrates, the app role runs", () => {
  test("the owner (no superuser) migrates into the schema: no extension, nothing outside it", async () => {
    const known = await loadMigrations();
    for (const m of known)
      expect(m.sql, m.name).not.toMatch(/create\s+extension|alter\s+system|event\s+trigger/i);
    const applied = await migrate(poolAs(owner), { schema: SCHEMA });
    expect(applied).toEqual(known.map((m) => m.name));

    const { rows } = await db.pool.query(
      `select (select array_agg(extname::text order by extname) from pg_extension) as extensions,
              (select rolsuper from pg_roles where rolname = $1::text) as owner_super,
              (select count(*)::int from pg_class c join pg_namespace n on n.oid = c.relnamespace
               where n.nspname = 'public') as in_public,
              (select count(*)::int from pg_proc p join pg_namespace n on n.oid = p.pronamespace
               where n.nspname = 'public') as functions_in_public,
              to_regclass('${SCHEMA}.hookrelay_migrations') is not null as bookkeeping`,
      [owner],
    );
    expect(rows[0]).toEqual({
      extensions: ["plpgsql"],
      owner_super: false,
      in_public: 0,
      functions_in_public: 0,
      bookkeeping: true,
    });
  });

  test("the app role runs API, worker, a delivery and every maintenance task with no permission error", async () => {
    const lines: string[] = [];
    const base = configAs(app, { operationalWebhookUrl: `${receiver.url}/ops` });
    const config = { ...base, alerts: { ...base.alerts, webhookUrl: `${receiver.url}/alerts` } };
    const rt = await start(config, lines);
    const created = await api(rt, "POST", "/app", { name: "A", uid: "lp-a" });
    expect(created.status).toBe(201);
    const ep = await api(rt, "POST", `/app/${created.body.id}/endpoint`, {
      url: `${receiver.url}/hook`,
    });
    expect(ep.status).toBe(201);
    const sent = await api(rt, "POST", `/app/${created.body.id}/msg`, {
      eventType: "order.paid",
      payload: { n: 1 },
    });
    expect(sent.status).toBe(202);
    await waitFor(() => receiver.on("/hook").length === 1, 20_000, "the delivery");
    await waitFor(() => receiver.on("/ops").length > 0, 20_000, "the operational event");
    expect(JSON.parse(receiver.on("/hook")[0]!.body)).toEqual({ n: 1 });

    // every maintenance task, as the runtime builds them, on a pool of the app role
    const appPool = poolAs(app);
    const tasks = maintenanceTasks(
      config,
      makeSecretBox(undefined, []),
      makeRedactor(),
      silentLogger,
    );
    expect(tasks.map((t) => t.name)).toEqual(
      expect.arrayContaining(["latency-stats", "chart-rollup", "retention", "alerts"]),
    );
    for (const task of tasks) await task.run(appPool);

    // and it is DML only: no DDL
    await expect(appPool.query("create table lp_probe (x int)")).rejects.toMatchObject({
      code: "42501",
    });
    await rt.stop();
    expect(lines.filter((l) => /permission denied|42501|insufficient_privilege/.test(l))).toEqual(
      [],
    );
  });

  test("one role for everything: a role that may create the schema migrates it at start and runs", async () => {
    const solo = uniqueRole("hr_solo");
    roles.push(solo);
    await runSql(
      db.url,
      `create role ${solo} login password '${ROLE_PASSWORD}';
       grant create on database ${db.name} to ${solo};
       alter role ${solo} set search_path = hookrelay_z;`,
    );
    const rt = await start(configAs(solo, { dbSchema: "hookrelay_z" }));
    expect((await api(rt, "GET", "/app")).status).toBe(200);
    await rt.stop();
    const { rows } = await db.pool.query(
      `select nspowner::regrole::text as owner,
              (select count(*)::int from hookrelay_z.hookrelay_migrations) as applied
       from pg_namespace where nspname = 'hookrelay_z'`,
    );
    expect(rows).toEqual([{ owner: solo, applied: (await loadMigrations()).length }]);
  });

  test("migrate as the app role on a current schema only reads", async () => {
    expect(await migrate(poolAs(app), { schema: SCHEMA })).toEqual([]);
  });
});

describe("the library", () => {
  test("send() on a caller's client whose search_path is public writes into the schema and leaves it public", async () => {
    const { rows } = await db.pool.query(
      `insert into ${SCHEMA}.applications (id, name, uid) values ('app_lib', 'L', 'lib') returning id`,
    );
    expect(rows).toHaveLength(1);
    const caller = new pg.Client({ connectionString: urlAs(db.url, app) });
    await caller.connect();
    const pool = poolAs(app);
    try {
      await caller.query("set search_path = public");
      // without the schema option the tables are not found from there (the check can fail)
      await caller.query("begin");
      await expect(
        new HookRelay({ pool }).send("lib", { eventType: "a.b", payload: {} }, { client: caller }),
      ).rejects.toThrow(/relation "applications" does not exist/);
      await caller.query("rollback");

      await caller.query("begin");
      const sent = await new HookRelay({ pool, schema: SCHEMA }).send(
        "lib",
        { eventType: "a.b", payload: { ok: true } },
        { client: caller },
      );
      expect((await caller.query("show search_path")).rows[0].search_path).toBe("public");
      await caller.query("commit");
      const stored = await db.pool.query(
        `select app_id, payload from ${SCHEMA}.messages where id = $1::text`,
        [sent.messageId],
      );
      expect(stored.rows).toEqual([{ app_id: "app_lib", payload: '{"ok":true}' }]);
      expect((await caller.query("show search_path")).rows[0].search_path).toBe("public");
    } finally {
      await caller.end();
    }
  });
});

describe("one sentence at start", () => {
  const oneSentence = (err: Error) => {
    expect(err.message).not.toContain("\n");
    expect(err.cause).toBeUndefined();
  };

  test("a role without rights on the tables is told which right it lacks", async () => {
    const err = await startFails(configAs(noRights));
    expect(err).toBeInstanceOf(PrivilegeError);
    expect(err).toMatchObject({ code: "insufficient_privilege" });
    expect(err.message).toMatch(
      new RegExp(
        `^role "${noRights}" lacks (select on table ${SCHEMA}\\.hookrelay_migrations|(select|insert|update|delete) on table ${SCHEMA}\\.\\w+ and \\d+ more right\\(s\\)) that hookrelay needs`,
      ),
    );
    oneSentence(err);
  });

  test("a role whose search_path leads elsewhere is told the alter role to run", async () => {
    const err = await startFails(configAs(owner));
    expect(err).toMatchObject({ code: "invalid_config" });
    expect(err.message).toContain(`run \`alter role ${owner} set search_path = ${SCHEMA}\``);
    oneSentence(err);
  });

  test("a server role facing a schema not migrated is told to run migrate with the owner's URL; given that URL it migrates by itself", async () => {
    const [owner2, late] = [uniqueRole("hr_owner"), uniqueRole("hr_late")];
    roles.push(owner2, late);
    const scripts = documentedRoleScripts({ owner: owner2, app: late, schema: "hookrelay_y" });
    await runSql(db.url, scripts.admin);
    await runSql(urlAs(db.url, owner2), scripts.owner);
    const config = configAs(late, { dbSchema: "hookrelay_y" });

    const err = await startFails(config);
    expect(err).toBeInstanceOf(SchemaNotMigratedError);
    expect(err.message).toMatch(
      new RegExp(
        `^schema "hookrelay_y" is not migrated and role "${late}" may not migrate it: run \`hookrelay migrate\` with HOOKRELAY_MIGRATION_DATABASE_URL`,
      ),
    );
    oneSentence(err);
    const skip = await startFails({ ...config, migrateOnStart: "skip" });
    expect(skip.message).toContain("is not migrated and HOOKRELAY_MIGRATE is skip");
    const { rows } = await db.pool.query(
      "select to_regclass('hookrelay_y.hookrelay_migrations') is null as untouched",
    );
    expect(rows[0].untouched).toBe(true);

    const rt = await start({ ...config, migrationDatabaseUrl: urlAs(db.url, owner2) });
    expect((await api(rt, "GET", "/app")).status).toBe(200);
    await rt.stop();
  });

  test("a role that may not create in public (PostgreSQL 15+) is told so when it migrates", async () => {
    const err = await migrate(poolAs(noRights), {}).then(
      () => new Error("migrated"),
      (e: Error) => e,
    );
    // its search_path leads to hookrelay_x, where it may not create either
    expect(err).toBeInstanceOf(PrivilegeError);
    expect(err.message).toMatch(
      new RegExp(`^role "${noRights}" may not change schema "${SCHEMA}"`),
    );
    const publicPool = makePool({
      connectionString: `${urlAs(db.url, noRights)}?options=-c%20search_path%3Dpublic`,
      max: 1,
    });
    pools.push(publicPool);
    const inPublic = await migrate(publicPool).then(
      () => new Error("migrated"),
      (e: Error) => e,
    );
    expect(inPublic.message).toContain("only the database owner may create in schema public");
    oneSentence(inPublic);
  });
});

test("the settings: a schema name must be a plain lowercase SQL name; HOOKRELAY_MIGRATE auto or skip", () => {
  expect(loadConfig({ HOOKRELAY_DB_SCHEMA: "hookrelay" }).dbSchema).toBe("hookrelay");
  expect(loadConfig({}).dbSchema).toBeUndefined();
  for (const bad of ["Hookrelay", "hook-relay", "1x", 'a"b', "pg_x", "a".repeat(64)])
    expect(() => loadConfig({ HOOKRELAY_DB_SCHEMA: bad }), bad).toThrow(/HOOKRELAY_DB_SCHEMA/);
  expect(loadConfig({}).migrateOnStart).toBe("auto");
  expect(loadConfig({ HOOKRELAY_MIGRATE: "skip" }).migrateOnStart).toBe("skip");
  expect(() => loadConfig({ HOOKRELAY_MIGRATE: "never" })).toThrow(/HOOKRELAY_MIGRATE/);
  expect(
    loadConfig({ HOOKRELAY_MIGRATION_DATABASE_URL: "postgres://o@h/d" }).migrationDatabaseUrl,
  ).toBe("postgres://o@h/d");
  expect(() => new HookRelay({ connectionString: "postgres://h/d", schema: "Bad" })).toThrow(
    /schema/,
  );
});

describe("the CLI", () => {
  test("migrate --database-url runs as the given role; a role without rights gets one line on stderr", async () => {
    const env = { HOOKRELAY_DB_SCHEMA: SCHEMA };
    const migrated = await runCli(["migrate", "--database-url", urlAs(db.url, owner)], { env });
    expect(migrated).toMatchObject({ code: 0, stdout: "schema up to date\n", stderr: "" });
    const refused = await runCli(["api", "--port", "0"], {
      env: { ...env, DATABASE_URL: urlAs(db.url, noRights) },
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(`^hookrelay: insufficient_privilege: role "${noRights}" lacks [^\\n]+\\n$`),
    );
  });
});
