/**
 * A claim counts the claiming worker's answered rows whose results are not written yet as
 * free room (queue/claim-deliveries.ts, UnwrittenResults; docs/delivery.md, "Room freed by
 * answers not yet written"), and never more: not the rows of a claim that was handed back,
 * not the rows of a write that has committed. Each test has an endpoint of its own with
 * maxInFlight 3 and six messages (the others disabled), and claims by itself (no worker
 * runs).
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { withTransaction } from "../src/db/pool.ts";
import {
  type ClaimedDelivery,
  claimDeliveries,
  type UnwrittenResults,
} from "../src/queue/claim-deliveries.ts";
import { enqueueMessage } from "../src/queue/enqueue-message.ts";
import { recordResults } from "../src/queue/record-results.ts";
import { releaseLostClaims } from "../src/queue/release-deliveries.ts";
import { claimOptions } from "./helpers/claim-options.ts";
import { successResult } from "./helpers/delivery-result.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h.close();
});

/**
 * An endpoint of its own (maxInFlight 3) with six queued messages; its id. The earlier
 * tests' endpoints are disabled: claims take from every endpoint.
 */
async function endpointWithSix(): Promise<string> {
  await h.db.pool.query("update endpoints set disabled = true");
  const app = await h.call("POST", "/api/v1/app", { name: "answered" });
  const ep = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, {
    url: "http://127.0.0.1:9/never",
    maxInFlight: 3,
  });
  expect(ep.status).toBe(201);
  for (let i = 0; i < 6; i++)
    await enqueueMessage(
      h.db.pool,
      { appId: app.body.id, eventType: "t", payload: `{"i":${i}}` },
      5,
    );
  return ep.body.id;
}

const options = claimOptions;

/** `n` answered rows of `endpointId`'s claim `token`, not written; in the write under way or not. */
function answered(
  endpointId: string,
  token: string,
  n: number,
  witness: ClaimedDelivery | null = null,
): UnwrittenResults {
  return {
    endpointIds: [endpointId],
    counts: [n],
    inWrite: [witness !== null],
    claimTokens: [token],
    witness: witness && { deliveryId: witness.id, messageMs: witness.messageMs, claimToken: token },
  };
}

/** The endpoint's rows in flight in the database. */
async function inFlight(endpointId: string): Promise<number> {
  const { rows } = await h.db.pool.query(
    "select count(*)::int as n from deliveries where endpoint_id = $1 and status = 'in_flight'",
    [endpointId],
  );
  return rows[0].n;
}

/** The result a worker holding `token` writes for a claimed row. */
const resultOf = (c: ClaimedDelivery, token: string) =>
  successResult({
    deliveryId: c.id,
    messageMs: c.messageMs,
    claimToken: token,
    messageId: c.messageId,
    endpointId: c.endpointId,
    appId: c.appId,
  });

test("answered rows not written yet are free room for the claim, and no more than they are", async () => {
  const endpointId = await endpointWithSix();
  const token = randomUUID();
  expect(await claimDeliveries(h.db.pool, options({ claimToken: token }))).toHaveLength(3);
  // all three in flight in the database: no room
  expect(await claimDeliveries(h.db.pool, options())).toHaveLength(0);
  // two of them answered, their results waiting for the writer: two free
  const more = await claimDeliveries(
    h.db.pool,
    options({ unwritten: answered(endpointId, token, 2) }),
  );
  expect(more).toHaveLength(2);
  // the same two again: 5 claimed, 2 answered, 3 at the receiver: full
  expect(
    await claimDeliveries(h.db.pool, options({ unwritten: answered(endpointId, token, 2) })),
  ).toHaveLength(0);
});

test("the answered rows of a claim that was handed back are not counted: the hand-back released them", async () => {
  const endpointId = await endpointWithSix();
  const tokenA = randomUUID();
  expect(await claimDeliveries(h.db.pool, options({ claimToken: tokenA }))).toHaveLength(3);
  // A's lease runs out and its rows are handed back; another claim takes three
  const later = new Date(Date.now() + 3_600_000);
  await releaseLostClaims(h.db.pool, { checkOwners: false, now: later });
  expect(await inFlight(endpointId)).toBe(0);
  expect(await claimDeliveries(h.db.pool, options())).toHaveLength(3);
  // A's worker, not knowing, still holds answers of its three: counted, they would make
  // room for three more past the endpoint's limit
  expect(
    await claimDeliveries(h.db.pool, options({ unwritten: answered(endpointId, tokenA, 3) })),
  ).toHaveLength(0);
  expect(await inFlight(endpointId)).toBe(3);
});

test("the rows of the write under way count while it has not committed, and not once it has", async () => {
  const endpointId = await endpointWithSix();
  const token = randomUUID();
  const first = await claimDeliveries(h.db.pool, options({ claimToken: token }));
  expect(first).toHaveLength(3);
  const written = first.slice(0, 2);
  const underWay = answered(endpointId, token, 2, written[0]!);
  await withTransaction(h.db.pool, async (writer) => {
    // the write of two results, applied, not committed
    await recordResults(
      writer,
      written.map((c) => resultOf(c, token)),
      h.config.health,
    );
    // its witness is still in flight in the claim's snapshot: its two rows are free room
    expect(await claimDeliveries(h.db.pool, options({ unwritten: underWay }))).toHaveLength(2);
  });
  // committed (the worker has not heard yet): released in the database, so counting them
  // again would pass the limit (5 claimed, 2 released, 3 in flight)
  expect(await claimDeliveries(h.db.pool, options({ unwritten: underWay }))).toHaveLength(0);
  expect(await inFlight(endpointId)).toBe(3);
});
