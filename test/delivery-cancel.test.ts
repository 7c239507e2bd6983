/**
 * Cancel (POST /deliveries/{id}/cancel): pending and awaiting-retry deliveries
 * cancel; delivered, dead, in-flight and canceled ones answer 409; unknown ids 404 and an
 * app key of another app sees nothing. Then, with a worker running, requeued dead letters
 * are delivered once each while a canceled delivery never is.
 *
 * Rows are seeded straight into the database (test/helpers/seeded-deliveries.ts); a real
 * worker and receiver on 127.0.0.1 for the delivery test.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import {
  ago,
  DAY,
  died,
  HOUR,
  MIN,
  newApp,
  newEndpoint,
  parkEverything,
  seed,
  shownDeliveryIds,
  V1,
} from "./helpers/seeded-deliveries.ts";

describe("dead letters", () => {
  let h: Harness;
  /** a delivery's id as the API shows it */
  let dlv: (id: number) => string;
  let rx: Receiver;

  beforeAll(async () => {
    h = await startHarness();
    dlv = await shownDeliveryIds(h.db.pool);
    rx = await startReceiver();
  });
  afterAll(async () => {
    await h?.close();
    await rx?.close();
  });

  // ------------------------------------------------------------------------ cancel

  describe("cancel", () => {
    test("statuses: pending and awaiting retry cancel; delivered, dead, in flight, canceled answer 409", async () => {
      const app = await newApp(h);
      const ep = await newEndpoint(h, app);
      const future = new Date(Date.now() + DAY);
      const [pending, failed, delivered, dead, inFlight] = await seed(h.db.pool, [
        { endpointId: ep.id, status: "pending", nextAttemptAt: future },
        { endpointId: ep.id, status: "failed", attempts: 2, nextAttemptAt: future },
        { endpointId: ep.id, status: "delivered" },
        died(ep.id, ago(MIN), 500),
        { endpointId: ep.id, status: "in_flight" },
      ]);
      const cancel = (id: number | string) =>
        h.call("POST", `${V1}/deliveries/${typeof id === "number" ? dlv(id) : id}/cancel`);

      for (const row of [pending!, failed!]) {
        const res = await cancel(row.deliveryId);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ deliveryId: dlv(row.deliveryId), status: "canceled" });
      }
      for (const [row, status] of [
        [delivered!, "delivered"],
        [dead!, "dead_letter"],
        [inFlight!, "in_flight"],
        [pending!, "canceled"],
      ] as const) {
        const res = await cancel(row.deliveryId);
        expect(res.status).toBe(409);
        expect(res.body.detail).toContain(`a ${status} delivery cannot be canceled`);
      }
      const statuses = [];
      for (const row of [pending, failed, delivered, dead, inFlight]) {
        const { rows } = await h.db.pool.query("select status from deliveries where id = $1", [
          row!.deliveryId,
        ]);
        statuses.push(rows[0].status);
      }
      expect(statuses).toEqual(["canceled", "canceled", "delivered", "dead_letter", "in_flight"]);

      expect((await cancel("dlv_999999999")).status).toBe(404);
      // a bare number is accepted as a delivery id too
      expect((await cancel("999999998")).status).toBe(404);
      expect((await cancel("nonsense")).status).toBe(400);

      // an app-scoped key of another app cannot see the delivery
      const other = await newApp(h);
      const { key } = await createApiKey(h.db.pool, { role: "app", appId: other });
      const [mine] = await seed(h.db.pool, [
        { endpointId: ep.id, status: "pending", nextAttemptAt: future },
      ]);
      const res = await h.call(
        "POST",
        `${V1}/deliveries/${dlv(mine!.deliveryId)}/cancel`,
        undefined,
        {
          authorization: `Bearer ${key}`,
        },
      );
      expect(res.status).toBe(404);
      await parkEverything(h.db.pool);
    });

    test("with a worker running: requeued dead letters are delivered, a canceled delivery never is", async () => {
      await parkEverything(h.db.pool);
      const app = await newApp(h);
      const requeueEp = await newEndpoint(h, app, {
        url: `${rx.url}/requeued`,
        eventTypes: ["seeded.event"],
      });
      await newEndpoint(h, app, { url: `${rx.url}/cancel`, eventTypes: ["order.created"] });
      const N = 25;
      const dead = await seed(
        h.db.pool,
        Array.from({ length: N }, (_, i) => ({
          ...died(requeueEp.id, ago(HOUR - i * 1000), 500, 5),
          payload: `{"n":${i}}`,
        })),
      );

      // The delivery to cancel: accepted while no worker runs, so it is still pending.
      const msg = await h.call("POST", `${V1}/app/${app}/msg`, {
        eventType: "order.created",
        payload: { cancel: true },
      });
      expect(msg.status).toBe(202);
      const { rows: pend } = await h.db.pool.query(
        "select id, status from deliveries where message_id = $1",
        [msg.body.id],
      );
      expect(pend[0].status).toBe("pending");
      const canceled = await h.call("POST", `${V1}/deliveries/${dlv(Number(pend[0].id))}/cancel`);
      expect(canceled.status).toBe(200);

      const requeued = await h.call("POST", `${V1}/dead-letters/requeue`, {
        endpointId: requeueEp.id,
      });
      expect(requeued.body).toEqual({ requeued: N });

      const worker = h.startWorker();
      try {
        // a later message to the same endpoint: once it has arrived, the canceled one had its chance
        const control = await h.call("POST", `${V1}/app/${app}/msg`, {
          eventType: "order.created",
          payload: { control: true },
        });
        await waitFor(
          () => rx.on("/requeued").length >= N && rx.on("/cancel").length >= 1,
          20_000,
          "requeued deliveries and the control message",
        );
        const ids = new Set(rx.on("/requeued").map((r) => String(r.headers["webhook-id"])));
        expect(ids).toEqual(new Set(dead.map((d) => d.messageId)));
        expect(
          rx
            .on("/requeued")
            .map((r) => JSON.parse(r.body).n)
            .sort((a, b) => a - b),
        ).toEqual(Array.from({ length: N }, (_, i) => i));
        const cancelRequests = rx.on("/cancel");
        expect(cancelRequests.map((r) => r.headers["webhook-id"])).toEqual([control.body.id]);

        await waitFor(
          async () => {
            const { rows } = await h.db.pool.query(
              "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'delivered' and attempt_count = 1",
              [requeueEp.id],
            );
            return rows[0].n === N;
          },
          10_000,
          "requeued rows marked delivered after one attempt",
        );
        const { rows } = await h.db.pool.query("select status from deliveries where id = $1", [
          pend[0].id,
        ]);
        expect(rows[0].status).toBe("canceled");
      } finally {
        await worker.stop();
      }
    });
  });
});
