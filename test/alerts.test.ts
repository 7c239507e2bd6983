/**
 * Alerts (docs/operations.md): each kind (dead letters growing, oldest pending, endpoint slow, circuit
 * open, endpoint gone) raised from its condition with severity, subject, since and a
 * sentence, and near misses that raise nothing; syncAlerts keeping the alerts table
 * (raised once, resolved when the condition clears); raised and resolved alerts posted to
 * the operator URL as signed messages through hookrelay's own queue.
 *
 * Rows are seeded straight into the database (test/helpers/seeded-deliveries.ts); the
 * alerts need a database whose whole content they know: this file's own.
 *
 * Tests with a "Regression:" comment pin defects found while writing them, since fixed.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { refreshLatencyStats } from "../src/health/latency-stats.ts";
import { syncAlerts } from "../src/ops/alerts.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { maintenanceTask } from "./helpers/maintenance-task.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import {
  ago,
  DAY,
  died,
  insertSamples,
  MIN,
  newApp,
  newEndpoint,
  type Seeded,
  seed,
  shownDeliveryIds,
  V1,
} from "./helpers/seeded-deliveries.ts";

// ================================================================================ alerts

describe("alerts", () => {
  let h: Harness;
  /** a delivery's id as the API shows it */
  let dlv: (id: number) => string;
  let rx: Receiver;
  let AL: string;
  let AL2: string;
  const ep: Record<string, { id: string; url: string; appId: string }> = {};
  let oldestRow: Seeded;
  let oldestCreated: Date;
  /** the growing endpoint's first death inside the window (8 min before the seed) */
  let growingSince: Date;

  beforeAll(async () => {
    rx = await startReceiver();
    const base = loadConfig({});
    h = await startHarness({ alerts: { ...base.alerts, deadLetterMin: 3 } });
    dlv = await shownDeliveryIds(h.db.pool);
    AL = await newApp(h);
    AL2 = await newApp(h);
    for (const name of ["growing", "tie", "few", "slow", "open", "halfOpen", "gone", "waiting"]) {
      ep[name] = await newEndpoint(h, AL);
    }
    await newEndpoint(h, AL2);
  });
  afterAll(async () => {
    await h?.close();
    await rx?.close();
  });

  /** Seeds all five conditions (and three near misses). */
  async function raiseEverything() {
    growingSince = ago(8 * MIN);
    await seed(h.db.pool, [
      // growing: 4 died in the last 15 min, 1 in the 15 min before (minimum 3)
      ...[5, 6, 7].map((m) => died(ep.growing!.id, ago(m * MIN), 500)),
      died(ep.growing!.id, growingSince, 500),
      died(ep.growing!.id, ago(20 * MIN), 500),
      // near miss: 3 and 3 (not more than before)
      ...[5, 6, 7].map((m) => died(ep.tie!.id, ago(m * MIN), 500)),
      ...[20, 21, 22].map((m) => died(ep.tie!.id, ago(m * MIN), 500)),
      // near miss: 2 recent, 0 before (under the minimum)
      ...[5, 6].map((m) => died(ep.few!.id, ago(m * MIN), 500)),
    ]);
    oldestCreated = ago(31 * MIN);
    oldestRow = (
      await seed(h.db.pool, [
        { endpointId: ep.waiting!.id, status: "pending", createdAt: oldestCreated },
      ])
    )[0]!;
    // slow: 20 samples of 3 s (threshold 2 s, at least 20 samples), through the stats refresh
    await insertSamples(
      h.db.pool,
      ep.slow!.id,
      Array.from({ length: 20 }, (_, i) => ({ at: ago((i + 1) * MIN), ms: 3_000, ok: true })),
    );
    await refreshLatencyStats(h.db.pool, h.config.health);
    await h.db.pool.query(
      `update endpoint_health set circuit_state = 'open', opened_at = now() - interval '2 minutes',
              open_until = now() + interval '1 hour', consecutive_failures = 10 where endpoint_id = $1`,
      [ep.open!.id],
    );
    await h.db.pool.query(
      `update endpoint_health set circuit_state = 'half_open', opened_at = now() - interval '10 minutes',
              consecutive_failures = 12 where endpoint_id = $1`,
      [ep.halfOpen!.id],
    );
    await h.db.pool.query(
      "update endpoints set disabled = true, disabled_reason = 'gone', updated_at = now() - interval '3 minutes' where id = $1",
      [ep.gone!.id],
    );
  }

  /** Clears each condition the way it clears in life. */
  async function clearEverything() {
    // time passes: the growing endpoint's deaths leave both windows
    await h.db.pool.query(
      "update deliveries set updated_at = updated_at - interval '40 minutes' where endpoint_id = any ($1::text[])",
      [[ep.growing!.id, ep.tie!.id, ep.few!.id]],
    );
    const cancel = await h.call("POST", `${V1}/deliveries/${dlv(oldestRow.deliveryId)}/cancel`);
    expect(cancel.status).toBe(200);
    await h.db.pool.query("delete from latency_samples where endpoint_id = $1", [ep.slow!.id]);
    await refreshLatencyStats(h.db.pool, h.config.health);
    for (const e of [ep.open!, ep.halfOpen!]) {
      expect((await h.call("POST", `${V1}/app/${AL}/endpoint/${e.id}/circuit/reset`)).status).toBe(
        200,
      );
    }
    expect(
      (await h.call("PATCH", `${V1}/app/${AL}/endpoint/${ep.gone!.id}`, { disabled: false }))
        .status,
    ).toBe(200);
  }

  const keyOf = (a: { kind: string; subject: { id: string } }) => `${a.kind} ${a.subject.id}`;

  test("each kind raised from its condition, with severity, subject, since and a sentence", async () => {
    await raiseEverything();
    const res = await h.call("GET", `${V1}/alerts`);
    expect(res.status).toBe(200);
    const alerts = res.body.data;
    expect(alerts.map(keyOf).sort()).toEqual(
      [
        `circuit_open ${ep.halfOpen!.id}`,
        `circuit_open ${ep.open!.id}`,
        `dead_letters_growing ${ep.growing!.id}`,
        `endpoint_gone ${ep.gone!.id}`,
        `endpoint_slow ${ep.slow!.id}`,
        "oldest_pending all",
      ].sort(),
    );
    const find = (kind: string, id: string) =>
      alerts.find(
        (a: { kind: string; subject: { id: string } }) => a.kind === kind && a.subject.id === id,
      );
    const growing = find("dead_letters_growing", ep.growing!.id);
    expect(growing).toMatchObject({
      severity: "warning",
      subject: { type: "endpoint", id: ep.growing!.id, appId: AL },
      message: `4 deliveries to ${ep.growing!.url} died in the last 15 min (1 in the 15 min before).`,
    });
    // since: the first death in the window, as seeded (not a time near the clock)
    expect(growing.since).toBe(growingSince.toISOString());

    const oldest = find("oldest_pending", "all");
    expect(oldest).toMatchObject({
      severity: "critical",
      subject: { type: "queue", id: "all", appId: null },
      since: new Date(oldestCreated.getTime() + 30 * MIN).toISOString(),
    });
    expect(oldest.message).toMatch(
      /^The oldest undelivered message has waited 31 min \(threshold 30 min\)\.$/,
    );

    expect(find("endpoint_slow", ep.slow!.id)).toMatchObject({
      severity: "warning",
      subject: { type: "endpoint", id: ep.slow!.id, appId: AL },
      message: `${ep.slow!.url} is slow: p95 3000 ms over the last 24 h (threshold 2000 ms).`,
    });
    const open = find("circuit_open", ep.open!.id);
    expect(open).toMatchObject({
      severity: "critical",
      subject: { type: "endpoint", id: ep.open!.id, appId: AL },
    });
    expect(open.message).toContain("is open after 10 consecutive failures");
    expect(find("circuit_open", ep.halfOpen!.id).message).toContain(
      "is half-open after 12 consecutive failures",
    );
    const gone = find("endpoint_gone", ep.gone!.id);
    expect(gone).toMatchObject({
      severity: "critical",
      // the disabled-endpoint contract (docs/delivery.md, "While an endpoint is disabled")
      message: `${ep.gone!.url} answered 410 Gone and was disabled; what it had queued and every message sent meanwhile wait for it (held) and go out, oldest first, when it is enabled again.`,
    });

    // scoped: the app's own alerts (the queue alert names the app), another app has none
    const scoped = await h.call("GET", `${V1}/alerts?app_id=${AL}`);
    expect(scoped.body.data.map(keyOf).sort()).toEqual(
      alerts
        .map(keyOf)
        .map((k: string) => (k === "oldest_pending all" ? `oldest_pending ${AL}` : k))
        .sort(),
    );
    expect((await h.call("GET", `${V1}/alerts?app_id=${AL2}`)).body).toEqual({ data: [] });
  });

  test("syncAlerts keeps the alerts table: raised once, resolved when the condition clears", async () => {
    const first = await syncAlerts(h.db.pool, h.config);
    expect(first.resolved).toEqual([]);
    expect(first.raised.map(keyOf).sort()).toEqual(
      (await h.call("GET", `${V1}/alerts`)).body.data.map(keyOf).sort(),
    );
    expect(first.raised).toHaveLength(6);

    const open = await h.db.pool.query(
      "select kind, subject_type, subject_id, app_id, severity, message, since, resolved_at from alerts order by id",
    );
    expect(open.rows).toHaveLength(6);
    for (const a of first.raised) {
      const row = open.rows.find((r) => r.kind === a.kind && r.subject_id === a.subject.id);
      expect(row).toMatchObject({
        subject_type: a.subject.type,
        app_id: a.subject.appId,
        severity: a.severity,
        message: a.message,
        resolved_at: null,
      });
      expect(row.since.toISOString()).toBe(a.since);
    }

    // nothing changed: nothing raised, nothing resolved
    expect(await syncAlerts(h.db.pool, h.config)).toEqual({ raised: [], resolved: [] });

    await clearEverything();
    expect((await h.call("GET", `${V1}/alerts`)).body).toEqual({ data: [] });
    const cleared = await syncAlerts(h.db.pool, h.config);
    expect(cleared.raised).toEqual([]);
    expect(cleared.resolved.map(keyOf).sort()).toEqual(first.raised.map(keyOf).sort());
    // the resolved alert is reported as it was raised
    for (const r of cleared.resolved) {
      const raised = first.raised.find((a) => keyOf(a) === keyOf(r))!;
      expect(r).toEqual(raised);
    }
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n, count(resolved_at)::int as resolved from alerts",
    );
    expect(rows[0]).toEqual({ n: 6, resolved: 6 });
    expect(await syncAlerts(h.db.pool, h.config)).toEqual({ raised: [], resolved: [] });

    // the same condition again: a new open row beside the resolved one
    await h.db.pool.query(
      "update endpoint_health set circuit_state = 'open', opened_at = now() where endpoint_id = $1",
      [ep.open!.id],
    );
    const again = await syncAlerts(h.db.pool, h.config);
    expect(again.raised.map(keyOf)).toEqual([`circuit_open ${ep.open!.id}`]);
    const history = await h.db.pool.query(
      "select resolved_at from alerts where kind = 'circuit_open' and subject_id = $1 order by id",
      [ep.open!.id],
    );
    expect(history.rows.map((r) => r.resolved_at === null)).toEqual([false, true]);
    await h.call("POST", `${V1}/app/${AL}/endpoint/${ep.open!.id}/circuit/reset`);
    expect((await syncAlerts(h.db.pool, h.config)).resolved.map(keyOf)).toEqual([
      `circuit_open ${ep.open!.id}`,
    ]);
  });

  test("raised and resolved alerts reach the operator URL as signed messages, through the queue", async () => {
    const config = {
      ...h.config,
      alerts: { ...h.config.alerts, webhookUrl: `${rx.url}/operator/alerts` },
    };
    const alertsTask = maintenanceTask(config, "alerts");
    const worker = h.startWorker();
    try {
      await h.db.pool.query(
        "update endpoint_health set circuit_state = 'open', opened_at = now(), consecutive_failures = 10 where endpoint_id = $1",
        [ep.open!.id],
      );
      await alertsTask.run(h.db.pool);
      await waitFor(() => rx.on("/operator/alerts").length >= 1, 15_000, "the raised alert");

      // the operator's endpoint is an ordinary endpoint: its secret is read like any other
      const secret = await h.call("GET", `${V1}/app/hookrelay-operator/endpoint/alerts/secret`);
      expect(secret.status).toBe(200);
      const wh = new Webhook(secret.body.key);
      const verify = (req: { body: string; headers: Record<string, unknown> }) =>
        wh.verify(req.body, {
          "webhook-id": String(req.headers["webhook-id"]),
          "webhook-timestamp": String(req.headers["webhook-timestamp"]),
          "webhook-signature": String(req.headers["webhook-signature"]),
        }) as Record<string, unknown>;

      const raised = verify(rx.on("/operator/alerts")[0]!);
      expect(raised).toMatchObject({
        event: "alert.raised",
        kind: "circuit_open",
        severity: "critical",
        subject: { type: "endpoint", id: ep.open!.id, appId: AL },
      });
      expect(String(raised.message)).toContain("is open after 10 consecutive failures");
      expect(Date.parse(String(raised.at))).toBeGreaterThan(Date.now() - 60_000);

      // it went through the queue: a message of the operator app, delivered
      const { rows: queued } = await h.db.pool.query(
        `select m.id, m.event_type, d.status from messages m join deliveries d on d.message_id = m.id
         join applications a on a.id = m.app_id where a.uid = 'hookrelay-operator' order by m.id`,
      );
      expect(queued[0]).toMatchObject({
        id: rx.on("/operator/alerts")[0]!.headers["webhook-id"],
        event_type: "alert.raised",
      });

      // resolved: the condition clears, the next run posts it
      expect(
        (await h.call("POST", `${V1}/app/${AL}/endpoint/${ep.open!.id}/circuit/reset`)).status,
      ).toBe(200);
      await alertsTask.run(h.db.pool);
      await waitFor(() => rx.on("/operator/alerts").length >= 2, 15_000, "the resolved alert");
      const resolved = verify(rx.on("/operator/alerts")[1]!);
      expect(resolved).toMatchObject({
        event: "alert.resolved",
        kind: "circuit_open",
        subject: { type: "endpoint", id: ep.open!.id, appId: AL },
      });

      // a run with no change posts nothing
      await alertsTask.run(h.db.pool);
      const { rows: count } = await h.db.pool.query(
        "select count(*)::int as n from messages m join applications a on a.id = m.app_id where a.uid = 'hookrelay-operator'",
      );
      expect(count[0].n).toBe(2);
      // a wrong secret does not verify
      expect(() =>
        new Webhook(`whsec_${Buffer.alloc(32, 9).toString("base64")}`).verify(
          rx.on("/operator/alerts")[0]!.body,
          {
            "webhook-id": String(rx.on("/operator/alerts")[0]!.headers["webhook-id"]),
            "webhook-timestamp": String(rx.on("/operator/alerts")[0]!.headers["webhook-timestamp"]),
            "webhook-signature": String(rx.on("/operator/alerts")[0]!.headers["webhook-signature"]),
          },
        ),
      ).toThrow();
    } finally {
      await worker.stop();
    }
  });

  // Regression: an endpoint_slow alert's "since" was the last stats refresh (so an endpoint
  // slow for hours showed "since <under a minute ago>"); it is now the open alert row's start.
  test("an endpoint_slow alert's since stays when it started, across stats refreshes", async () => {
    const slow = await newEndpoint(h, AL);
    await insertSamples(
      h.db.pool,
      slow.id,
      Array.from({ length: 20 }, (_, i) => ({ at: ago((i + 1) * MIN), ms: 4_000, ok: true })),
    );
    try {
      await refreshLatencyStats(h.db.pool, h.config.health);
      const raised = await syncAlerts(h.db.pool, h.config);
      expect(raised.raised.map(keyOf)).toEqual([`endpoint_slow ${slow.id}`]);
      // an hour passes (the alert has been open since then), the stats are refreshed again
      await h.db.pool.query(
        "update alerts set since = since - interval '1 hour' where subject_id = $1",
        [slow.id],
      );
      const { rows } = await h.db.pool.query(
        "select since from alerts where subject_id = $1 and resolved_at is null",
        [slow.id],
      );
      await refreshLatencyStats(h.db.pool, h.config.health);
      const res = await h.call("GET", `${V1}/alerts?app_id=${AL}`);
      const alert = res.body.data.find(
        (a: { kind: string; subject: { id: string } }) => keyOf(a) === `endpoint_slow ${slow.id}`,
      );
      expect(alert.since).toBe(rows[0].since.toISOString());
    } finally {
      await h.db.pool.query("delete from latency_samples where endpoint_id = $1", [slow.id]);
      await refreshLatencyStats(h.db.pool, h.config.health);
      await syncAlerts(h.db.pool, h.config);
    }
  });

  // Regression: a message scheduled for later (deliverAt) was counted as waiting from its
  // created_at, so it raised oldest_pending before it was even due; waiting now counts from
  // when a delivery first became due, and deliveries not due yet are skipped.
  test("a message scheduled for tomorrow does not raise oldest_pending", async () => {
    const app = await newApp(h);
    await newEndpoint(h, app);
    const msg = await h.call("POST", `${V1}/app/${app}/msg`, {
      eventType: "later",
      payload: {},
      deliverAt: new Date(Date.now() + DAY).toISOString(),
    });
    expect(msg.status).toBe(202);
    // 40 minutes pass
    await h.db.pool.query(
      "update deliveries set created_at = created_at - interval '40 minutes' where message_id = $1",
      [msg.body.id],
    );
    await h.db.pool.query(
      "update messages set created_at = created_at - interval '40 minutes' where id = $1",
      [msg.body.id],
    );
    try {
      const res = await h.call("GET", `${V1}/alerts?app_id=${app}`);
      expect(res.body.data.map(keyOf)).toEqual([]);
    } finally {
      await h.db.pool.query("update deliveries set status = 'canceled' where message_id = $1", [
        msg.body.id,
      ]);
    }
  });
});
