/**
 * The result write (src/queue/record-results.ts) holds its endpoints' health rows for as
 * little of the statement as it can: the attempts, the latency samples and the claims' delete
 * are written before it locks them. Every claim of every worker locks the health rows of the
 * endpoints it takes from, so whatever the write does while holding them, the claims wait for
 * (docs/performance.md, "Scenario 3 with two workers").
 *
 * Seen from outside while the write waits for a health row this test holds: triggers on
 * attempts and latency_samples (this database's only) count their rows as they are inserted
 * (before-row triggers: after-row ones fire at the statement's end) through a sequence, whose
 * value other sessions see before the write commits.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { ID_PREFIX, newId } from "../src/ids.ts";
import { recordResults } from "../src/queue/record-results.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { successResult } from "./helpers/delivery-result.ts";
import { inFlightOf, setInFlight } from "./helpers/in-flight.ts";

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

test("a result write inserts its attempts and latency samples before it locks a health row", async () => {
  const pool = db.pool;
  await pool.query(
    `insert into applications (id, uid, name) values ('app_lo', 'lo', 'lo');
     insert into endpoints (id, app_id, url) values ('ep_lo', 'app_lo', 'http://127.0.0.1:9/');
     create sequence written_rows;
     create function count_written_row() returns trigger language plpgsql as $$
       begin perform nextval('written_rows'); return new; end $$;
     create trigger attempts_counted before insert on attempts
       for each row execute function count_written_row();
     create trigger samples_counted before insert on latency_samples
       for each row execute function count_written_row();`,
  );
  const messageId = newId(ID_PREFIX.message);
  const token = randomUUID();
  await pool.query(
    `insert into messages (id, app_id, event_type, payload, message_ms)
     values ($1::text, 'app_lo', 't', '{}', hookrelay_message_ms($1::text))`,
    [messageId],
  );
  const { rows } = await pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, next_attempt_at,
                             claim_token, message_ms)
     values ($1::text, 'ep_lo', 'app_lo', 'in_flight', 5, now(), $2::uuid, hookrelay_message_ms($1::text))
     returning id, message_ms`,
    [messageId, token],
  );
  await setInFlight(pool, ["ep_lo"], 1);

  // the endpoint's health row, held as a claim of another worker holds it
  const holder = await pool.connect();
  let write: Promise<number> | null = null;
  try {
    await holder.query("begin");
    await holder.query("select 1 from endpoint_health where endpoint_id = 'ep_lo' for update");
    write = recordResults(
      pool,
      [
        successResult({
          deliveryId: Number(rows[0].id),
          messageMs: Number(rows[0].message_ms),
          claimToken: token,
          messageId,
          endpointId: "ep_lo",
          appId: "app_lo",
          finishesClaim: true,
        }),
      ],
      loadConfig({}).health,
    );
    // the write's backend, once it waits for the held row (bounded: 400 looks, 25 ms apart;
    // from a connection of its own: a transaction sees pg_stat_activity as it first read it)
    const holderPid = (await holder.query("select pg_backend_pid() as pid")).rows[0].pid;
    let waiting = false;
    for (let i = 0; i < 400 && !waiting; i++) {
      const { rows: blocked } = await pool.query(
        `select 1 from pg_stat_activity
         where datname = current_database() and wait_event_type = 'Lock'
           and $1::int = any (pg_blocking_pids(pid))`,
        [holderPid],
      );
      waiting = blocked.length > 0;
      if (!waiting) await new Promise((r) => setTimeout(r, 25));
    }
    expect(waiting).toBe(true);
    // while it waits: its attempt and its latency sample are in (one row each)
    const { rows: seq } = await holder.query(
      "select last_value::int as n, is_called from written_rows",
    );
    expect(seq[0]).toEqual({ n: 2, is_called: true });
  } finally {
    await holder.query("rollback");
    holder.release();
  }
  expect(await write).toBe(1);
  const { rows: after } = await pool.query(
    `select (select status from deliveries where id = $1) as status,
            ${inFlightOf("'ep_lo'")} as in_flight,
            (select count(*)::int from attempts where delivery_id = $1) as attempts`,
    [rows[0].id],
  );
  expect(after[0]).toEqual({ status: "delivered", in_flight: 0, attempts: 1 });
});
