/**
 * The list queries behind browsing (docs/browse.md) on 250,000 rows: with each filter
 * the message list and the attempt lists are answered through an index, never a
 * sequential scan of messages, deliveries or attempts. Each statement is the one the
 * query module sends (captured), explained with its values after ANALYZE, as autovacuum
 * would have run it on a table this size.
 *
 * A page (LIMIT 51) walked through an index costs about the same on any table size, and a
 * sequential scan or a hash of a whole table costs in proportion to it, so a smaller table
 * tempts the planner more: a plan that stays on an index here stays on it on millions of
 * rows. (A million rows took 80-190 s to seed on the 2-core machine; both sizes gave the
 * same verdicts with the list indexes dropped on purpose and with the attempt list's
 * `offset 0` removed.) The rows span the same ~28 hours as a million did.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import type { Queryable } from "../src/db/pool.ts";
import { type AttemptFilter, listAttempts } from "../src/db/queries/attempts.ts";
import { listMessages, type MessageFilter } from "../src/db/queries/messages.ts";
import { bulkSeed } from "./helpers/bulk-seed.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { newApp, newEndpoint } from "./helpers/seeded-deliveries.ts";

const ROWS = 250_000;

let h: Harness;
let appId: string;
let endpointId: string;

beforeAll(async () => {
  h = await startHarness();
  appId = await newApp(h);
  endpointId = (await newEndpoint(h, appId)).id;
  const other = await newApp(h);
  // loaded as a bulk load is (test/helpers/bulk-seed.ts: each index built once after the
  // rows, then ANALYZE), to the same schema
  await bulkSeed(h.db.pool, ["messages", "deliveries", "attempts"], async (db) => {
    // ROWS messages over the last ~28 hours, 20 event types, 50 channels; a second
    // app's few beside them
    await db.query(
      `insert into messages (id, app_id, event_type, payload, channels, created_at)
     select 'msg_seed' || lpad(g::text, 10, '0'), case when g % 1000 = 0 then $2::text else $1::text end,
            't' || (g % 20), '{}', array['c' || (g % 50)],
            now() - make_interval(secs => ($3::integer - g) * (100000.0 / $3::integer))
     from generate_series(1, $3::integer) g`,
      [appId, other, ROWS],
    );
    // a delivery of each to the endpoint, in one of four states
    await db.query(
      `insert into deliveries (message_id, endpoint_id, app_id, status, max_attempts, created_at, updated_at)
     select m.id, $2::text, m.app_id,
            (array['delivered', 'delivered', 'failed', 'dead_letter'])[1 + (right(m.id, 6)::integer % 4)],
            5, m.created_at, m.created_at
     from messages m where m.app_id = $1::text`,
      [appId, endpointId],
    );
    // an attempt of each delivery
    await db.query(
      `insert into attempts (delivery_id, message_id, endpoint_id, app_id, attempt_number, trigger,
                           url, started_at, latency_ms, outcome, status_code)
     select d.id, d.message_id, d.endpoint_id, d.app_id, 1, 'scheduled', 'http://127.0.0.1:9/x',
            d.created_at, 10, case when d.status = 'delivered' then 'success' else 'failure' end,
            case when d.status = 'delivered' then 200 when d.status = 'failed' then 503 end
     from deliveries d where d.endpoint_id = $1::text`,
      [endpointId],
    );
  });
}, 600_000);
afterAll(() => h?.close());

/** The plan of the statement `send` makes, as text. */
async function planOf(send: (db: Queryable) => Promise<unknown>): Promise<string> {
  let sent: { text: string; values: unknown[] } | null = null;
  const recorder = {
    query: async (text: string, values: unknown[]) => {
      sent = { text, values };
      return { rows: [] };
    },
  } as unknown as Queryable;
  await send(recorder);
  const statement = sent as unknown as { text: string; values: unknown[] };
  const { rows } = await h.db.pool.query(`explain (costs off) ${statement.text}`, statement.values);
  return rows.map((r) => r["QUERY PLAN"]).join("\n");
}

const HOUR = 3_600_000;
const page = { cursor: null, op: "<", direction: "desc", limit: 51 } as const;
const noMessageFilter: MessageFilter = {
  eventTypes: null,
  channel: null,
  tag: null,
  before: null,
  after: null,
};

/** No sequential scan of a seeded table (attempts_legacy is empty here: nothing to read). */
function expectIndexOnly(plan: string) {
  expect(plan, plan).not.toMatch(/Seq Scan on (messages|deliveries|attempts|attempts_default) /);
  expect(plan, plan).toMatch(/Index/);
}

test("the message list: through an index with each filter", async () => {
  const filters: Record<string, Partial<MessageFilter>> = {
    none: {},
    eventTypes: { eventTypes: ["t3", "t7"] },
    channel: { channel: "c9" },
    before: { before: new Date(Date.now() - 20 * HOUR) },
    after: { after: new Date(Date.now() - 2 * HOUR) },
    window: { after: new Date(Date.now() - 6 * HOUR), before: new Date(Date.now() - 5 * HOUR) },
    deliveryStatuses: { deliveryStatuses: ["dead_letter"] },
    endpointId: { endpointId: "" },
    everything: {
      eventTypes: ["t3"],
      channel: "c3",
      after: new Date(Date.now() - 10 * HOUR),
      deliveryStatuses: ["failed", "dead_letter"],
      endpointId: "",
    },
  };
  for (const [name, f] of Object.entries(filters)) {
    const filter = { ...noMessageFilter, ...f };
    if (filter.endpointId === "") filter.endpointId = endpointId;
    const plan = await planOf((db) => listMessages(db, appId, filter, page));
    expectIndexOnly(`${name}\n${plan}`);
    // the next page too: the cursor keeps it on the index
    const next = await planOf((db) =>
      listMessages(db, appId, filter, { ...page, cursor: "msg_seed0000125000" }),
    );
    expectIndexOnly(`${name}, next page\n${next}`);
  }
}, 120_000);

test("the attempt lists: through an index with each filter", async () => {
  const base: AttemptFilter = { messageId: null, endpointId, outcome: null };
  const filters: Record<string, Partial<AttemptFilter>> = {
    none: {},
    outcome: { outcome: "failure" },
    statusCodeClass: { statusCodeClass: 500 },
    noResponse: { statusCodeClass: 0 },
    eventTypes: { eventTypes: ["t1", "t2"] },
    channel: { channel: "c1" },
    after: { after: new Date(Date.now() - 2 * HOUR) },
    before: { before: new Date(Date.now() - 20 * HOUR) },
    message: { messageId: "msg_seed0000100001" },
    everything: {
      outcome: "failure",
      statusCodeClass: 500,
      eventTypes: ["t1"],
      channel: "c1",
      after: new Date(Date.now() - 10 * HOUR),
    },
  };
  for (const [name, f] of Object.entries(filters)) {
    const plan = await planOf((db) => listAttempts(db, { ...base, ...f }, page));
    expectIndexOnly(`${name}\n${plan}`);
  }
}, 120_000);
