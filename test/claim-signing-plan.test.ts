/**
 * The claim (src/queue/claim-deliveries.ts) looks its endpoints' signing secrets up once per
 * endpoint, whatever the number of rows it claims: the `signing` step is materialized. Inlined,
 * the generic plan the worker runs the claim with (its estimate for the claimed rows is one
 * row) put the lookup under a nested loop over the claimed rows, and read and sorted every
 * endpoint's secrets again for each row, with every health row of the claim locked
 * (docs/performance.md, "Scenario 3 with two workers"). Read from EXPLAIN ANALYZE of the
 * claim's generic plan, in a transaction rolled back.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { claimDeliveries } from "../src/queue/claim-deliveries.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { captureStatement, explainGeneric } from "./helpers/generic-plan.ts";

const ENDPOINTS = 4;
const PER_ENDPOINT = 6;

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

const options = () => ({
  workerId: "signing-plan",
  workerLock: null,
  claimToken: randomUUID(),
  limit: 256,
  defaultMaxInFlight: 20,
  defaultTimeoutMs: 15_000,
  leaseMarginMs: 5_000,
});

test("the claim reads each endpoint's secrets once, not once per claimed row", async () => {
  const pool = db.pool;
  await pool.query(
    `insert into applications (id, uid, name) values ('app_sp', 'sp', 'sp');
     insert into endpoints (id, app_id, url)
       select 'ep_sp_' || g, 'app_sp', 'http://127.0.0.1:9/' || g from generate_series(1, ${ENDPOINTS}) g;
     -- each endpoint: its current secret and one in a rotation's grace
     insert into endpoint_secrets (endpoint_id, secret, expires_at)
       select e.id, 'whsec_old_' || e.id, now() + interval '1 hour' from endpoints e where e.app_id = 'app_sp';
     insert into endpoint_secrets (endpoint_id, secret)
       select e.id, 'whsec_new_' || e.id from endpoints e where e.app_id = 'app_sp';
     with r as (
       select 'msg_sp_' || e.id || '_' || g as message_id, e.id as endpoint_id,
              -- (today's period, as the API writes them: inside the claim's window)
              (extract(epoch from now()) * 1000)::bigint as message_ms
       from endpoints e, generate_series(1, ${PER_ENDPOINT}) g where e.app_id = 'app_sp'),
     m as (insert into messages (id, app_id, event_type, payload, message_ms)
           select message_id, 'app_sp', 't', '{}', message_ms from r)
     insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                             next_attempt_at, message_ms)
       select message_id, endpoint_id, 'app_sp', 'pending', 0, 5, now() - interval '1 minute',
              message_ms from r;`,
  );

  // the statement the worker sends, captured, and its generic plan, as the worker runs it
  // (db/local-settings.ts)
  const statement = await captureStatement((recorder) => claimDeliveries(recorder, options()));
  const plan = await explainGeneric(pool, statement);
  expect(plan).toContain(`rows=${ENDPOINTS * PER_ENDPOINT} loops=1`);
  // the secrets' step: its own node, run once
  const at = plan.indexOf("CTE signing");
  expect(at, plan).toBeGreaterThan(-1);
  const step = plan.slice(at).split("\n")[1] ?? "";
  expect(step, plan).toMatch(/Aggregate .*rows=4 loops=1\)/);
  // and the rows it signs with: each endpoint's secrets, newest first
  const claimed = await claimDeliveries(pool, options());
  expect(claimed).toHaveLength(ENDPOINTS * PER_ENDPOINT);
  for (const c of claimed)
    expect(c.secrets).toEqual([`whsec_new_${c.endpointId}`, `whsec_old_${c.endpointId}`]);
});
