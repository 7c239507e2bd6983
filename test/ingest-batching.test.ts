/**
 * API ingest writes concurrent requests' messages together (group commit). Whatever lands
 * in one batch, each request must get its own answer: repeated eventIds inside one batch
 * resolve to one message, and fan-out counts stay per message.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h.close());

test("concurrent creates with repeated eventIds yield one message per eventId", async () => {
  const app = await h.call("POST", "/api/v1/app", { name: "batch" });
  await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url: "https://93.184.215.14/a", eventTypes: ["a"] });
  await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url: "https://93.184.215.14/b" });
  const calls = Array.from({ length: 60 }, (_, i) =>
    h.call("POST", `/api/v1/app/${app.body.id}/msg`, {
      eventType: i % 2 === 0 ? "a" : "b",
      eventId: `e${i % 12}`,
      payload: { i },
    }),
  );
  const results = await Promise.all(calls);
  expect(results.filter((r) => r.status === 202)).toHaveLength(12);
  expect(results.filter((r) => r.status === 200)).toHaveLength(48);
  const byEvent = new Map<string, Set<string>>();
  for (const r of results) {
    const set = byEvent.get(r.body.eventId) ?? new Set<string>();
    set.add(r.body.id);
    byEvent.set(r.body.eventId, set);
  }
  expect([...byEvent.values()].every((ids) => ids.size === 1)).toBe(true);
  const { rows } = await h.db.pool.query(
    `select m.event_type, count(d.id)::int as deliveries
     from messages m left join deliveries d on d.message_id = m.id
     where m.app_id = $1 group by m.id, m.event_type`,
    [app.body.id],
  );
  expect(rows).toHaveLength(12);
  // "a" goes to both endpoints, "b" only to the unfiltered one
  for (const r of rows) expect(r.deliveries).toBe(r.event_type === "a" ? 2 : 1);
});
