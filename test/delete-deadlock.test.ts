/**
 * Deleting an endpoint or an application cascades through its health row and deliveries,
 * which a worker's claim and result write lock the other way round (deliveries first). When
 * the two meet, PostgreSQL aborts one of them to break the deadlock; the delete is then run
 * again, never answered 500 (docs/reliability.md, "Deletes against the workers"). Here a
 * transaction of the test plays the worker: it holds a delivery of the endpoint, waits until
 * the delete waits on that delivery, then asks for the endpoint's health row.
 */
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

/** An app with one endpoint and one pending delivery to it (no worker runs). */
async function endpointWithDelivery(uid: string): Promise<{ appId: string; endpointId: string }> {
  const app = (await h.call("POST", `${V1}/app`, { name: uid, uid })).body;
  const ep = (
    await h.call("POST", `${V1}/app/${app.id}/endpoint`, { url: "http://127.0.0.1:9/none" })
  ).body;
  await h.call("POST", `${V1}/app/${app.id}/msg`, { eventType: "a.b", payload: {} });
  return { appId: app.id, endpointId: ep.id };
}

/**
 * Plays the worker's lock order against `del` (a delete request started by the caller): holds
 * the endpoint's delivery, waits until the delete waits for it, then locks the health row.
 */
async function raceWorkerOrder(endpointId: string, del: () => Promise<number>): Promise<number> {
  const worker = new pg.Client({ connectionString: h.db.url });
  await worker.connect();
  try {
    await worker.query("begin");
    await worker.query("select 1 from deliveries where endpoint_id = $1 for no key update", [
      endpointId,
    ]);
    const answered = del();
    // the delete has the health row and waits on the delivery held here
    await waitFor(
      async () => {
        const { rows } = await h.db.pool.query(
          `select 1 from pg_stat_activity
           where wait_event_type = 'Lock' and query like '%delete from%' and pid <> $1`,
          [(worker as unknown as { processID: number }).processID],
        );
        return rows.length > 0;
      },
      10_000,
      "the delete waiting on the delivery",
    );
    // the worker's side: the health row, after the delivery. One of the two is aborted.
    await worker
      .query("select 1 from endpoint_health where endpoint_id = $1 for no key update", [endpointId])
      .catch((err: { code?: string }) => {
        if (err.code !== "40P01") throw err;
      });
    await worker.query("rollback");
    return await answered;
  } finally {
    await worker.end();
  }
}

test("an endpoint's delete that loses a deadlock to a worker is run again: 204, and it is gone", async () => {
  const { appId, endpointId } = await endpointWithDelivery("dl-ep");
  const status = await raceWorkerOrder(endpointId, async () => {
    const res = await h.call("DELETE", `${V1}/app/${appId}/endpoint/${endpointId}`);
    return res.status;
  });
  expect(status).toBe(204);
  const left = await h.db.pool.query("select count(*)::int as n from endpoints where id = $1", [
    endpointId,
  ]);
  expect(left.rows[0].n).toBe(0);
});

test("an application's delete that loses a deadlock to a worker is run again: 204, and it is gone", async () => {
  const { appId, endpointId } = await endpointWithDelivery("dl-app");
  const status = await raceWorkerOrder(endpointId, async () => {
    const res = await h.call("DELETE", `${V1}/app/${appId}`);
    return res.status;
  });
  expect(status).toBe(204);
  const left = await h.db.pool.query(
    "select count(*)::int as n from deliveries where endpoint_id = $1",
    [endpointId],
  );
  expect(left.rows[0].n).toBe(0);
});
