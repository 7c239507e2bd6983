/**
 * Claims, the queue's hand-out of due deliveries to workers, beside other writers: a
 * result carrying a stale claim token changes nothing while the current one applies; a
 * claim does not wait for an endpoint's health row held by a result write, and reads the
 * write's rows as still in flight until it commits; a probe is single when two claims
 * meet on an open circuit; racing claims never
 * take a row twice; a claim rewrites its rows in place, leases them in one claims row and
 * commits without a flush wait; expired leases are handed back once; and stop() cuts off a
 * request still running at the drain deadline and releases its row unused.
 *
 * Each test has its own database (a harness of its own) and claims by itself, with no
 * worker running unless it starts one.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, test } from "vitest";
import { withTransaction } from "../src/db/pool.ts";
import {
  type ClaimedDelivery,
  type ClaimOptions,
  claimDeliveries,
} from "../src/queue/claim-deliveries.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { type DeliveryResult, recordResults } from "../src/queue/record-results.ts";
import { releaseLostClaims } from "../src/queue/release-deliveries.ts";
import { claimOptions } from "./helpers/claim-options.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { inFlightOf } from "./helpers/in-flight.ts";
import { startRawServer } from "./helpers/raw-server.ts";
import { waitFor } from "./helpers/receiver.ts";

/** A successful attempt's result for a claimed row, as a worker holding `token` reports it. */
function resultFor(
  claim: ClaimedDelivery,
  token: string,
  over: Partial<DeliveryResult> = {},
): DeliveryResult {
  return {
    deliveryId: claim.id,
    messageMs: claim.messageMs,
    claimToken: token,
    messageId: claim.messageId,
    endpointId: claim.endpointId,
    appId: claim.appId,
    trigger: claim.trigger,
    url: claim.url,
    attemptNumber: claim.attemptCount + 1,
    nextStatus: "delivered",
    retryDelayMs: 0,
    startedAt: new Date(),
    latencyMs: 5,
    success: true,
    statusCode: 200,
    errorKind: null,
    error: null,
    responseBody: null,
    isProbe: claim.isProbe,
    pauseMs: null,
    ...over,
  };
}

/** When the one claims row's lease runs out (the database's time, to the microsecond). */
async function leaseEndOf(h2: Harness): Promise<Date> {
  const { rows } = await h2.db.pool.query(
    // rounded up to the next millisecond: a Date has no microseconds
    "select ceil(extract(epoch from lease_expires_at) * 1000)::float8 as ms from claims",
  );
  expect(rows).toHaveLength(1);
  return new Date(rows[0].ms);
}

/** How many other sessions wait for a lock in a statement whose text holds `fragment`. */
async function lockWaits(h2: Harness, fragment: string): Promise<number> {
  const { rows } = await h2.db.pool.query(
    `select count(*)::int as n from pg_stat_activity
     where datname = current_database() and pid <> pg_backend_pid()
       and wait_event_type = 'Lock' and strpos(query, $1) > 0`,
    [fragment],
  );
  return rows[0].n;
}

// ---------------------------------------------------------------- stale results

describe("claim tokens", () => {
  test("a result carrying a stale claim token changes nothing; the current one applies", async () => {
    // Its own database and no worker: only this test claims.
    const h2 = await startHarness();
    try {
      const app = await h2.call("POST", "/api/v1/app", { name: "stale" });
      const ep = await h2.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
        url: "http://127.0.0.1:9/never",
      });
      expect(ep.status).toBe(201);
      const { messageId } = await enqueueMessage(
        h2.db.pool,
        { appId: app.body.id, eventType: "t", payload: "{}" },
        5,
      );

      const claimOptions = (token: string, workerId: string): ClaimOptions => ({
        workerId,
        workerLock: null,
        claimToken: token,
        limit: 10,
        defaultMaxInFlight: 20,
        defaultTimeoutMs: 1_000,
        leaseMarginMs: 1_000,
      });
      const tokenA = randomUUID();
      const tokenB = randomUUID();
      const claimedA = await claimDeliveries(h2.db.pool, claimOptions(tokenA, "worker-a"));
      expect(claimedA).toHaveLength(1);
      // Under its lease the row is not claimable.
      expect(
        await claimDeliveries(h2.db.pool, claimOptions(randomUUID(), "worker-x")),
      ).toHaveLength(0);

      // Worker A's lease runs out (the check's clock at its end): the row is handed back, and
      // worker B takes it.
      const leaseEnd = await leaseEndOf(h2);
      expect(await releaseLostClaims(h2.db.pool, { checkOwners: true, now: leaseEnd })).toBe(1);
      expect(await h2.db.pool.query("select * from claims")).toMatchObject({ rowCount: 0 });
      const claimedB = await claimDeliveries(h2.db.pool, claimOptions(tokenB, "worker-b"));
      expect(claimedB).toHaveLength(1);
      expect(claimedB[0]!.id).toBe(claimedA[0]!.id);

      const health = h2.config.health;
      const inFlightCount = async () =>
        (await h2.db.pool.query(`select ${inFlightOf("$1")} as in_flight`, [ep.body.id])).rows[0]
          ?.in_flight;
      const before = (await h2.db.pool.query("select * from deliveries")).rows[0];
      expect(before.status).toBe("in_flight");
      expect(before.claim_token).toBe(tokenB);
      // Say worker B's request is its endpoint's half-open probe (and was A's too).
      await h2.db.pool.query(
        "update endpoint_health set circuit_state = 'half_open', probe_delivery_id = $2 where endpoint_id = $1",
        [ep.body.id, before.id],
      );
      const circuit = async () =>
        (
          await h2.db.pool.query(
            "select circuit_state from endpoint_health where endpoint_id = $1",
            [ep.body.id],
          )
        ).rows[0].circuit_state;

      // Worker A comes back late with a permanent failure: it must not land.
      const stale = await recordResults(
        h2.db.pool,
        [
          resultFor(claimedA[0]!, tokenA, {
            nextStatus: "dead_letter",
            success: false,
            statusCode: 400,
            errorKind: "http",
            error: "HTTP 400",
            isProbe: true,
          }),
        ],
        health,
      );
      expect(stale).toBe(0);
      const after = (await h2.db.pool.query("select * from deliveries")).rows[0];
      expect(after).toEqual(before);
      // Nor does it free worker B's in-flight slot, or reopen the circuit as a failed probe.
      expect(await inFlightCount()).toBe(1);
      expect(await circuit()).toBe("half_open");

      const current = await recordResults(
        h2.db.pool,
        [resultFor(claimedB[0]!, tokenB, { isProbe: true })],
        health,
      );
      expect(current).toBe(1);
      expect(await inFlightCount()).toBe(0);
      expect(await circuit()).toBe("closed");
      const final = (
        await h2.db.pool.query("select * from deliveries where message_id = $1", [messageId])
      ).rows[0];
      expect(final.status).toBe("delivered");
      expect(final.attempt_count).toBe(1);
      expect(final.claim_token).toBeNull();
      expect(final.last_status_code).toBe(200);
      expect(final.delivered_at).not.toBeNull();
    } finally {
      await h2.close();
    }
  });
});

// ---------------------------------------------------------------- claims beside other writers

describe("claims and concurrent writers", () => {
  const options = claimOptions;

  async function endpointWithMessages(h2: Harness, n: number): Promise<string> {
    const app = await h2.call("POST", "/api/v1/app", { name: "claims" });
    const ep = await h2.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
      url: "http://127.0.0.1:9/never",
    });
    for (let i = 0; i < n; i++) {
      await enqueueMessage(
        h2.db.pool,
        { appId: app.body.id, eventType: "t", payload: `{"i":${i}}` },
        5,
      );
    }
    return ep.body.id;
  }

  test("a claim does not wait for an endpoint's health row held by a result write, and takes its rows", async () => {
    // Its own database and no worker: only this test claims. Claims lock the endpoints'
    // claim rows (endpoint_claim_state); the health row is the result write's
    // (migration 0041), so a write holding it no longer holds back any claim.
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 5);
      await withTransaction(h2.db.pool, async (writer) => {
        // what a result write holds between its apply statement and its commit
        await writer.query("select 1 from endpoint_health where endpoint_id = $1 for update", [
          endpointId,
        ]);
        // (were it to wait for that row, this would never resolve: the test's timeout)
        const claimed = await claimDeliveries(h2.db.pool, options());
        expect(claimed).toHaveLength(5);
      });
    } finally {
      await h2.close();
    }
  });

  test("a claim beside a result write that has not committed counts the write's rows still in flight: it takes less room, never more", async () => {
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 5);
      await h2.db.pool.query("update endpoints set max_in_flight = 3 where id = $1", [endpointId]);
      const token = randomUUID();
      const first = await claimDeliveries(h2.db.pool, options({ claimToken: token, limit: 2 }));
      expect(first).toHaveLength(2);
      const health = h2.config.health;
      await withTransaction(h2.db.pool, async (writer) => {
        // a result write of both rows, applied but not committed: it holds the health row
        expect(
          await recordResults(
            writer,
            first.map((c) => resultFor(c, token)),
            health,
          ),
        ).toBe(2);
        // the claim reads the released count as committed: 2 of 3 still in flight, 1 free
        const during = await claimDeliveries(h2.db.pool, options());
        expect(during).toHaveLength(1);
      });
      // committed: the write's 2 rows are free again, 1 is in flight: 2 more of the 3
      const after = await claimDeliveries(h2.db.pool, options());
      expect(after).toHaveLength(2);
      const { rows } = await h2.db.pool.query(
        `select ${inFlightOf("$1")} as counted,
                (select count(*)::int from deliveries where endpoint_id = $1 and status = 'in_flight') as actual`,
        [endpointId],
      );
      expect(rows[0]).toEqual({ counted: 3, actual: 3 });
    } finally {
      await h2.close();
    }
  });

  test("an open circuit's probe: a claim waits for the health row another claim's probe holds, then takes nothing", async () => {
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 5);
      // open, its cooldown over: the next claim takes exactly one probe
      await h2.db.pool.query(
        `update endpoint_health set circuit_state = 'open', opened_at = now() - interval '1 hour',
           open_until = now() - interval '1 second', cooldown_ms = 1000
         where endpoint_id = $1`,
        [endpointId],
      );
      let second: ClaimedDelivery[] | null = null;
      await withTransaction(h2.db.pool, async (first) => {
        // the first claim, not committed yet: it holds the claim row and the health row
        const probe = await claimDeliveries(first, options());
        expect(probe.map((c) => c.isProbe)).toEqual([true]);
        const claim = claimDeliveries(h2.db.pool, options()).then((rows) => {
          second = rows;
        });
        await waitFor(
          async () => (await lockWaits(h2, "no_flush_wait as")) === 1,
          5_000,
          "the second claim to wait",
        );
        expect(second).toBeNull();
        // When the first claim commits, the second reads the circuit in its newest version
        // (half_open, its probe under way) because it locks the health row of a circuit
        // that is not closed: read as its snapshot had it (open, its cooldown over), it
        // would take a second probe.
        void claim;
      });
      await waitFor(() => second !== null, 5_000, "the second claim");
      expect(second!).toEqual([]);
      const { rows } = await h2.db.pool.query(
        `select (select circuit_state from endpoint_health where endpoint_id = $1) as state,
                (select count(*)::int from circuit_events where endpoint_id = $1 and to_state = 'half_open') as probes,
                (select count(*)::int from deliveries where endpoint_id = $1 and status = 'in_flight') as in_flight`,
        [endpointId],
      );
      expect(rows[0]).toEqual({ state: "half_open", probes: 1, in_flight: 1 });
    } finally {
      await h2.close();
    }
  });

  test("claims racing for one endpoint never take a row twice, and its in-flight count is what they took", async () => {
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 30);
      const rounds = await Promise.all(
        Array.from({ length: 6 }, () => claimDeliveries(h2.db.pool, options())),
      );
      const ids = rounds.flat().map((c) => c.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(20); // the default max in flight of the endpoint
      const { rows } = await h2.db.pool.query(
        `select ${inFlightOf("$1")} as counted,
                (select count(*)::int from deliveries where endpoint_id = $1 and status = 'in_flight') as actual`,
        [endpointId],
      );
      expect(rows[0]).toEqual({ counted: 20, actual: 20 });
    } finally {
      await h2.close();
    }
  });

  test("a claim rewrites its rows in place (no index entries), leases them in one claims row, commits without a flush wait, and the last result ends it", async () => {
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 12);
      const token = randomUUID();
      // The transaction's own statistics: how many of its updates were in place (HOT).
      const claimed = await withTransaction(h2.db.pool, async (client) => {
        // as in production (the test cluster runs with synchronous_commit off)
        await client.query("set local synchronous_commit = on");
        const rows = await claimDeliveries(client, options({ claimToken: token, limit: 10 }));
        const { rows: stats } = await client.query(
          // (summed over deliveries' partitions: docs/history.md)
          `select sum(pg_stat_get_xact_tuples_updated(relid))::int as updated,
                  sum(pg_stat_get_xact_tuples_hot_updated(relid))::int as in_place
           from pg_partition_tree('deliveries') where isleaf`,
        );
        expect(stats[0]).toEqual({ updated: 10, in_place: 10 });
        // Its commit does not wait for the WAL flush (a lost claim only makes its rows due
        // again); the setting is the transaction's own.
        const { rows: sync } = await client.query(
          "select current_setting('synchronous_commit') as v",
        );
        expect(sync[0].v).toBe("off");
        // lease = the endpoint's timeout (1 s by default here) + the margin (30 s), from the
        // claim's own now() (the transaction's), not from this process' clock
        const { rows: lease } = await client.query(
          "select (extract(epoch from lease_expires_at - now()) * 1000)::int as ms from claims",
        );
        expect(lease).toEqual([{ ms: 31_000 }]);
        return rows;
      });
      expect(claimed).toHaveLength(10);
      const { rows: leases } = await h2.db.pool.query(
        "select token, delivery_ids, lease_expires_at from claims",
      );
      expect(leases).toHaveLength(1);
      expect(leases[0].token).toBe(token);
      expect(leases[0].delivery_ids.map(Number).sort((a: number, b: number) => a - b)).toEqual(
        claimed.map((c) => c.id).sort((a, b) => a - b),
      );

      await recordResults(
        h2.db.pool,
        claimed.slice(0, 9).map((c) => resultFor(c, token)),
        h2.config.health,
      );
      expect((await h2.db.pool.query("select 1 from claims")).rowCount).toBe(1);
      await recordResults(
        h2.db.pool,
        [resultFor(claimed[9]!, token, { finishesClaim: true })],
        h2.config.health,
      );
      expect((await h2.db.pool.query("select 1 from claims")).rowCount).toBe(0);
      // Nothing is left to hand back, and the two rows never claimed are still due.
      expect(await releaseLostClaims(h2.db.pool, { checkOwners: true })).toBe(0);
      const { rows } = await h2.db.pool.query(
        "select status, count(*)::int as n from deliveries where endpoint_id = $1 group by status order by status",
        [endpointId],
      );
      expect(rows).toEqual([
        { status: "delivered", n: 10 },
        { status: "pending", n: 2 },
      ]);
      // In its own transaction (as the worker runs it) the setting ends with the claim.
      const session = await h2.db.pool.connect();
      try {
        await session.query("set synchronous_commit = on");
        expect(await claimDeliveries(session, options({ limit: 1 }))).toHaveLength(1);
        expect((await session.query("show synchronous_commit")).rows[0].synchronous_commit).toBe(
          "on",
        );
        await session.query("reset synchronous_commit");
      } finally {
        session.release();
      }
    } finally {
      await h2.close();
    }
  });

  test("rows of a claim whose lease ran out are handed back once, with their in-flight slots", async () => {
    const h2 = await startHarness();
    try {
      const endpointId = await endpointWithMessages(h2, 5);
      const first = await claimDeliveries(h2.db.pool, options({ limit: 5 }));
      expect(first).toHaveLength(5);
      // Under the lease, to its last millisecond: nothing to hand back, nothing left to claim.
      const leaseEnd = await leaseEndOf(h2);
      const justBefore = new Date(leaseEnd.getTime() - 1);
      expect(await releaseLostClaims(h2.db.pool, { checkOwners: true, now: justBefore })).toBe(0);
      expect(await claimDeliveries(h2.db.pool, options({ now: justBefore }))).toHaveLength(0);

      // Its end, with two workers looking at once: each row comes back exactly once.
      const released = await Promise.all([
        releaseLostClaims(h2.db.pool, { checkOwners: true, now: leaseEnd }),
        releaseLostClaims(h2.db.pool, { checkOwners: true, now: leaseEnd }),
      ]);
      expect(released[0] + released[1]).toBe(5);
      const { rows } = await h2.db.pool.query(
        `select ${inFlightOf("$1")} as in_flight,
                (select count(*)::int from deliveries where endpoint_id = $1 and status = 'pending'
                   and claim_token is null and attempt_count = 0) as pending,
                (select count(*)::int from claims) as claims`,
        [endpointId],
      );
      expect(rows[0]).toEqual({ in_flight: 0, pending: 5, claims: 0 });
      const again = await claimDeliveries(h2.db.pool, options());
      expect(again.map((c) => c.id).sort()).toEqual(first.map((c) => c.id).sort());
    } finally {
      await h2.close();
    }
  });

  test("stop(): a request still running at the drain deadline is cut off and its row released, unused", async () => {
    let requestClosed = false;
    let requests = 0;
    const server = await startRawServer((res) => {
      requests++;
      res.on("close", () => {
        requestClosed = true;
      });
      // never answers
    });
    const h2 = await startHarness({ ssrfAllowlist: ["127.0.0.0/8"] });
    try {
      const app = await h2.call("POST", "/api/v1/app", { name: "drain" });
      const ep = await h2.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
        url: `${server.url}/hang`,
        // longer than this test may run: only the drain deadline can end the request
        timeoutMs: 120_000,
      });
      const msg = await h2.call("POST", `/api/v1/app/${app.body.id}/msg`, {
        eventType: "t",
        payload: { a: 1 },
      });
      const worker = h2.startWorker({ shutdownTimeoutMs: 300 });
      await waitFor(() => requests === 1, 5_000, "the request to reach the server");

      // stop() returns (its endpoint's timeout is past the test's own), and the rows below
      // show a release by the drain: no attempt recorded, as a timeout would have been
      await worker.stop();
      await waitFor(() => requestClosed, 3_000, "the request to be cut off");
      const { rows } = await h2.db.pool.query(
        `select d.status, d.attempt_count, d.claim_token,
                (select count(*)::int from attempts a where a.delivery_id = d.id) as attempts,
                ${inFlightOf("d.endpoint_id")} as in_flight,
                (select count(*)::int from claims) as claims
         from deliveries d where d.message_id = $1 and d.endpoint_id = $2`,
        [msg.body.id, ep.body.id],
      );
      expect(rows).toEqual([
        {
          status: "pending",
          attempt_count: 0,
          claim_token: null,
          attempts: 0,
          in_flight: 0,
          claims: 0,
        },
      ]);
    } finally {
      await h2.close();
      await server.close();
    }
  });
});
