/**
 * A resend or a replay that writes a delivery for a message while retention deletes that
 * message (docs/history.md): no foreign key cascades since messages are partitioned, so the
 * writers lock the message as one would, and retention deletes what they wrote once they
 * commit. Neither order leaves a delivery without its message.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import type { RetentionConfig } from "../src/config.ts";
import { resendDelivery } from "../src/db/queries/deliveries.ts";
import { purgeExpired } from "../src/ops/retention.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const DAY = 24 * 60 * 60_000;

let h: Harness;
let retention: RetentionConfig;
beforeAll(async () => {
  h = await startHarness();
  retention = { ...h.config.retention, payloadMs: 20 * DAY, batch: 100 };
});
afterAll(async () => {
  await h?.close();
});

/** An app with two endpoints and a message 25 days old delivered to the first only. */
async function oldDeliveredMessage() {
  const app = await h.call("POST", `${V1}/app`, { name: `race-${Math.random()}` });
  const ep = async (n: string) =>
    (await h.call("POST", `${V1}/app/${app.body.id}/endpoint`, { url: `http://127.0.0.1:9/${n}` }))
      .body.id as string;
  const [first, second] = [await ep("a"), await ep("b")];
  const id = `msg_race_${Math.random().toString(36).slice(2, 10)}`;
  const pool = h.db.pool;
  await pool.query(
    "insert into messages (id, app_id, event_type, payload, created_at) values ($1, $2, 'e', '{}', now() - interval '25 days')",
    [id, app.body.id],
  );
  await pool.query(
    `insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts, next_attempt_at)
     values ($1, $2, $3, 'delivered', 1, 5, now())`,
    [id, first, app.body.id],
  );
  return { id, second };
}

async function deliveriesOf(messageId: string): Promise<number> {
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from deliveries where message_id = $1",
    [messageId],
  );
  return rows[0].n;
}

test("a resend committed while retention waits on its message: its delivery goes with the message", async () => {
  const m = await oldDeliveredMessage();
  const writer = await h.db.pool.connect();
  try {
    await writer.query("begin");
    expect(await resendDelivery(writer, m.id, m.second, 5)).toBe(true);
    const purge = purgeExpired(h.db.pool, retention);
    // the purge's delete of the message waits for the resend's lock on it (without the
    // lock it would not wait, and finish first)
    const first = await Promise.race([
      purge.then(() => "purge finished"),
      waitFor(async () => {
        const { rows } = await h.db.pool.query(
          "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%with gone as%'",
        );
        return rows[0].n > 0;
      }).then(() => "purge waits"),
    ]);
    expect(first).toBe("purge waits");
    await writer.query("commit");
    expect((await purge).messages).toBeGreaterThanOrEqual(1);
  } finally {
    writer.release();
  }
  const { rows } = await h.db.pool.query("select count(*)::int as n from messages where id = $1", [
    m.id,
  ]);
  expect(rows[0].n).toBe(0);
  expect(await deliveriesOf(m.id)).toBe(0);
});

test("a resend after retention deleted the message writes nothing", async () => {
  const m = await oldDeliveredMessage();
  const purger = await h.db.pool.connect();
  try {
    // retention's delete, not yet committed: the resend waits for it, then finds no message
    await purger.query("begin");
    await purger.query("delete from deliveries where message_id = $1", [m.id]);
    await purger.query("delete from messages where id = $1", [m.id]);
    const resend = resendDelivery(h.db.pool, m.id, m.second, 5);
    await waitFor(async () => {
      const { rows } = await h.db.pool.query(
        "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%for key share%'",
      );
      return rows[0].n > 0;
    });
    await purger.query("commit");
    expect(await resend).toBe(false);
  } finally {
    purger.release();
  }
  expect(await deliveriesOf(m.id)).toBe(0);
});
