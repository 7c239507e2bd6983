/**
 * The claim is never JIT-compiled (src/queue/claim-deliveries.ts through src/db/local-settings.ts;
 * docs/delivery.md, "The claim and JIT"), on Debian's PostgreSQL 15 with JIT on (its
 * default where LLVM is installed), directly and through PgBouncer 1.18 in transaction
 * mode, and it leaves JIT on for whatever runs next on the server connection. 600
 * endpoints with due rows put the claim's estimated cost past jit_above_cost, here lowered
 * to 10,000 (a tenth of its default: the claim's estimate moves with every change to the
 * statement, and this test is about JIT being off, not about where the threshold lies; the
 * claim of 7 Dec's 2ff6b32 fell under the default at 600 endpoints): the same statement
 * sent bare is compiled (the control).
 * What was compiled is read from pg_stat_statements' JIT counters, so nothing here depends
 * on timing.
 *
 * Needs /usr/lib/postgresql/15 with its LLVM JIT and /usr/sbin/pgbouncer (.ci/run installs
 * them): without them the file skips loudly, except in CI, where it fails.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { loadConfig } from "../src/config.ts";
import { migrate } from "../src/db/migrate.ts";
import { makePool, type Pool, withTransaction } from "../src/db/pool.ts";
import { claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { buildTestApi, testConfig } from "./helpers/harness.ts";
import { type PooledDatabase, pgbouncerMissing, startPooledDatabase } from "./helpers/pgbouncer.ts";

const ENDPOINTS = 600;
const BATCH = loadConfig({}).worker.claimBatch;
const missing = pgbouncerMissing();
const skip = (what: string) => {
  const say = `test/claim-jit.test.ts: ${what}`;
  if (process.env.CI) throw new Error(`${say}: required in CI`);
  console.warn(`\n!!! SKIPPING ${say} !!!\n`);
};
if (missing) skip(`${missing} not installed (apt-get install postgresql-15 pgbouncer)`);

let db: PooledDatabase | undefined;
let noJit: string | null = null;
const pools: Pool[] = [];

function pool(url: string, preparedStatements = true): Pool {
  const p = makePool({ connectionString: url, max: 1, preparedStatements });
  pools.push(p);
  return p;
}

beforeAll(async () => {
  if (missing) return;
  db = await startPooledDatabase({
    mode: "transaction",
    poolSize: 1,
    settings: ["shared_preload_libraries=pg_stat_statements", "jit_above_cost=10000"],
  });
  const direct = pool(db.directUrl);
  const { rows } = await direct.query(
    "select current_setting('jit') as jit, pg_jit_available() as available",
  );
  if (rows[0].jit !== "on" || !rows[0].available) {
    noJit = `JIT is not on in PostgreSQL 15 (jit=${rows[0].jit}, LLVM ${rows[0].available ? "" : "not "}available)`;
    skip(noJit);
    return;
  }
  await migrate(direct);
  await direct.query("create extension pg_stat_statements");
  const config = testConfig({ databaseUrl: db.directUrl });
  const api = await buildTestApi({ pool: direct, config });
  try {
    const { key } = await createApiKey(direct, { role: "admin" });
    const post = async (url: string, payload: Record<string, unknown>) => {
      const res = await api.inject({
        method: "POST",
        url,
        payload,
        headers: { authorization: `Bearer ${key}` },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.json();
    };
    const app = await post("/api/v1/app", { name: "jit" });
    await post(`/api/v1/app/${app.id}/endpoint`, { url: "http://127.0.0.1:9/ep" });
  } finally {
    await api.close();
  }
  // the endpoint made through the API, copied into the others (a trigger gives each its
  // health row)
  await direct.query(
    `insert into endpoints
     select (jsonb_populate_record(null::endpoints, to_jsonb(s)
               || jsonb_build_object('id', s.id || '_' || g, 'url', s.url || '-' || g))).*
     from endpoints s, generate_series(2, $1::int) g`,
    [ENDPOINTS],
  );
  const health = await direct.query("select count(*)::int as n from endpoint_health");
  expect(health.rows[0].n).toBe(ENDPOINTS);
  // 20 due rows per endpoint, half of them under two ordering keys
  await direct.query(
    `with r as (
       select 'msg_jit_' || e.id || '_' || g as message_id, e.id as endpoint_id, e.app_id,
              case when g % 2 = 0 then 'key-' || g % 4 end as ordering_key,
              -- (today's period, as the API writes them: inside the claim's window)
              (extract(epoch from now()) * 1000)::bigint as message_ms
       from endpoints e, generate_series(1, 20) g),
     m as (
       insert into messages (id, app_id, event_type, payload, message_ms)
       select message_id, app_id, 'jit.test', '{}', message_ms from r)
     insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count,
                             max_attempts, next_attempt_at, ordering_key, message_ms)
     select message_id, endpoint_id, app_id, 'pending', 0, 5, now() - interval '1 minute',
            ordering_key, message_ms
     from r`,
  );
  await direct.query("analyze");
}, 120_000);

afterAll(async () => {
  for (const p of pools) await p.end();
  await db?.stop();
}, 60_000);

const options = () => ({
  workerId: "jit-test",
  workerLock: null,
  claimToken: randomUUID(),
  // the worker's default batch (HOOKRELAY_CLAIM_BATCH): the claim's estimate grows with it
  limit: BATCH,
  defaultMaxInFlight: 20,
  defaultTimeoutMs: 15_000,
  leaseMarginMs: 5_000,
});

/** The claim's runs since the last reset, and the functions JIT compiled for them. */
async function claimRuns(): Promise<{ calls: number; jitFunctions: number }> {
  const direct = pools[0] as Pool;
  const { rows } = await direct.query(
    `select coalesce(sum(calls), 0)::int as calls, coalesce(sum(jit_functions), 0)::int as jit
     from pg_stat_statements where query like '%no_flush_wait%'`,
  );
  return { calls: rows[0].calls, jitFunctions: rows[0].jit };
}

const resetStatements = () => (pools[0] as Pool).query("select pg_stat_statements_reset()");

class RolledBack extends Error {}

describe.skipIf(missing)("the claim on PostgreSQL 15 with JIT on", () => {
  test("the bare claim statement is JIT-compiled there: the control", async (t) => {
    if (noJit) t.skip();
    await resetStatements();
    const claimed = await withTransaction(pool((db as PooledDatabase).directUrl), async (c) => {
      const rows = await claimDeliveries(c, options());
      throw Object.assign(new RolledBack(), { rows });
    }).catch((err: unknown) => {
      if (!(err instanceof RolledBack)) throw err;
      return (err as RolledBack & { rows: unknown[] }).rows;
    });
    expect(claimed).toHaveLength(BATCH);
    const runs = await claimRuns();
    expect(runs.calls).toBe(1);
    expect(runs.jitFunctions).toBeGreaterThan(0);
  });

  test("a claim on a direct connection is not JIT-compiled, is planned generically from its first run, and leaves both settings as they were", async (t) => {
    if (noJit) t.skip();
    const direct = pool((db as PooledDatabase).directUrl);
    await resetStatements();
    for (let i = 0; i < 3; i++)
      expect(await claimDeliveries(direct, options())).toHaveLength(BATCH);
    expect(await claimRuns()).toEqual({ calls: 3, jitFunctions: 0 });
    // the pool's one connection, after the claims: one plan, made generic from the first run
    // (PostgreSQL's default would have made three custom plans by now)
    const { rows } = await direct.query(
      `select current_setting('jit') as jit, current_setting('plan_cache_mode') as mode,
              generic_plans::int as generic, custom_plans::int as custom
       from pg_prepared_statements where name = 'hookrelay_claim_deliveries'`,
    );
    expect(rows).toEqual([{ jit: "on", mode: "auto", generic: 3, custom: 0 }]);
  });

  test("a claim through PgBouncer in transaction mode is not JIT-compiled and leaves JIT on", async (t) => {
    if (noJit) t.skip();
    const pooled = pool((db as PooledDatabase).pooledUrl, false);
    // another client of the pooler, sharing its one server connection
    const other = pool((db as PooledDatabase).pooledUrl, false);
    await resetStatements();
    for (let i = 0; i < 3; i++) {
      expect(await claimDeliveries(pooled, options())).toHaveLength(BATCH);
      const { rows } = await other.query("select current_setting('jit') as jit");
      expect(rows[0].jit).toBe("on");
    }
    expect(await claimRuns()).toEqual({ calls: 3, jitFunctions: 0 });
  });
});
