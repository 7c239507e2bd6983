/**
 * Browsing through the API (docs/browse.md): the message list's filters and status
 * counts, the attempt lists' Svix filters (status_code_class, event_types, channel), bad
 * filters refused with 422, and the message export (CSV and JSON, filtered, capped).
 * Attempts are made for real: a worker delivers to a receiver that accepts one path and
 * refuses the other.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";
import { newApp, V1 } from "./helpers/seeded-deliveries.ts";

let h: Harness;
let rx: Receiver;
let appId: string;
let okEp: string;
let badEp: string;
const sent: Record<string, string> = {};

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver((r) => ({ status: r.path.startsWith("/bad") ? 503 : 200 }));
  appId = await newApp(h);
  const ok = await h.call("POST", `${V1}/app/${appId}/endpoint`, { url: `${rx.url}/ok` });
  // one attempt and it is a dead letter: the test waits for no retry
  const bad = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
    url: `${rx.url}/bad`,
    maxAttempts: 1,
    eventTypes: ["order.failed"],
  });
  okEp = ok.body.id;
  badEp = bad.body.id;
  for (const [name, body] of Object.entries({
    paid: { eventType: "order.paid", payload: { n: 1 }, channels: ["eu"] },
    paidUs: { eventType: "order.paid", payload: { n: 2 }, channels: ["us"] },
    failed: { eventType: "order.failed", payload: { n: 3, note: "=1+1" }, eventId: "=cmd" },
  })) {
    const res = await h.call("POST", `${V1}/app/${appId}/msg`, body);
    expect(res.status).toBe(202);
    sent[name] = res.body.id;
  }
  const worker = h.startWorker();
  try {
    await waitFor(
      async () =>
        (
          await h.db.pool.query(
            "select count(*)::int as n from deliveries where status in ('delivered', 'dead_letter')",
          )
        ).rows[0].n === 4,
      15_000,
      "four deliveries done",
    );
  } finally {
    await worker.stop();
  }
}, 60_000);
afterAll(async () => {
  await rx?.close();
  await h?.close();
});

const ids = (body: { data: { id: string }[] }) => body.data.map((m) => m.id);

test("the message list filters by event type, channel, status, endpoint and time, and counts statuses", async () => {
  const list = (q: string) => h.call("GET", `${V1}/app/${appId}/msg?with_content=false&${q}`);
  expect(ids((await list("event_types=order.paid")).body)).toEqual([sent.paidUs, sent.paid]);
  expect(ids((await list("channel=eu")).body)).toEqual([sent.paid]);
  expect(ids((await list("delivery_status=dead_letter")).body)).toEqual([sent.failed]);
  expect(ids((await list(`endpoint_id=${badEp}`)).body)).toEqual([sent.failed]);
  const future = new Date(Date.now() + 3_600_000).toISOString();
  expect(ids((await list(`after=${future}`)).body)).toEqual([]);
  expect(ids((await list(`before=${future}&event_types=order.failed`)).body)).toEqual([
    sent.failed,
  ]);
  const withStatus = await list("with_status=true&event_types=order.failed");
  expect(withStatus.body.data[0].deliveryStatusCounts).toEqual({ delivered: 1, dead_letter: 1 });
  // without with_status the answer is Svix's shape, unchanged
  expect((await list("event_types=order.failed")).body.data[0]).not.toHaveProperty(
    "deliveryStatusCounts",
  );
});

test("the attempt lists filter by status code class, event type and channel", async () => {
  const byEndpoint = (ep: string, q: string) =>
    h.call("GET", `${V1}/app/${appId}/attempt/endpoint/${ep}?${q}`);
  const msgIds = (body: { data: { msgId: string }[] }) => body.data.map((a) => a.msgId).sort();
  expect(msgIds((await byEndpoint(okEp, "status_code_class=200")).body)).toEqual(
    [sent.paid, sent.paidUs, sent.failed].sort(),
  );
  expect(msgIds((await byEndpoint(okEp, "status_code_class=500")).body)).toEqual([]);
  expect(msgIds((await byEndpoint(badEp, "status_code_class=500")).body)).toEqual([sent.failed]);
  expect(msgIds((await byEndpoint(okEp, "event_types=order.paid")).body)).toEqual(
    [sent.paid, sent.paidUs].sort(),
  );
  expect(msgIds((await byEndpoint(okEp, "channel=us")).body)).toEqual([sent.paidUs]);
  expect(msgIds((await byEndpoint(okEp, "status=2")).body)).toEqual([]);
  const byMsg = await h.call(
    "GET",
    `${V1}/app/${appId}/attempt/msg/${sent.failed}?status_code_class=500`,
  );
  expect(byMsg.body.data.map((a: { endpointId: string }) => a.endpointId)).toEqual([badEp]);
});

test("an unknown status or a bad date is a 422 with the field named", async () => {
  for (const url of [
    `${V1}/app/${appId}/msg?delivery_status=lost`,
    `${V1}/app/${appId}/msg?before=yesterday`,
    `${V1}/app/${appId}/msg?after=2026-13-40T00:00:00Z`,
    `${V1}/app/${appId}/msg?before=2026-02-30T10:00:00Z`,
    `${V1}/app/${appId}/attempt/endpoint/${okEp}?status_code_class=250`,
    `${V1}/app/${appId}/attempt/endpoint/${okEp}?status=9`,
    `${V1}/app/${appId}/attempt/endpoint/${okEp}?before=soon`,
    `${V1}/app/${appId}/export/msg?delivery_status=lost`,
    `${V1}/app/${appId}/export/msg?after=not-a-date`,
    `${V1}/app/${appId}/export/msg?format=xml`,
    `${V1}/app/${appId}/export/msg?max_rows=100001`,
  ]) {
    const res = await h.call("GET", url);
    expect(res.status, url).toBe(422);
    expect(res.body.code, url).toBe("validation_error");
    const field = /[?&](\w+)=/.exec(url.replace(/\?.*&/, "?"))?.[1] ?? "";
    expect(JSON.stringify(res.body), url).toContain(field);
  }
});

test("the export: CSV with a status column, filtered, formulas defused", async () => {
  const res = await h.api.inject({
    method: "GET",
    url: `${V1}/app/${appId}/export/msg?event_types=order.failed`,
    headers: { authorization: `Bearer ${h.adminKey}` },
  });
  expect(res.statusCode).toBe(200);
  expect(res.headers["content-type"]).toBe("text/csv; charset=utf-8");
  expect(res.headers["content-disposition"]).toContain(".csv");
  const lines = res.body.trimEnd().split("\r\n");
  expect(lines[0]).toBe("id,timestamp,eventType,eventId,channels,tags,orderingKey,status");
  expect(lines).toHaveLength(2);
  expect(lines[1]).toMatch(
    new RegExp(`^${sent.failed},[^,]+,order.failed,'=cmd,,,,"dead_letter 1, delivered 1"$`),
  );
});

test("the export: JSON, capped, says it was cut; payloads on request", async () => {
  const get = async (q: string) => {
    const res = await h.api.inject({
      method: "GET",
      url: `${V1}/app/${appId}/export/msg?format=json&${q}`,
      headers: { authorization: `Bearer ${h.adminKey}` },
    });
    expect(res.statusCode).toBe(200);
    return JSON.parse(res.body);
  };
  const all = await get("");
  expect(all.truncated).toBe(false);
  expect(all.maxRows).toBe(100_000);
  expect(all.data.map((m: { id: string }) => m.id)).toEqual([sent.failed, sent.paidUs, sent.paid]);
  expect(all.data[0]).not.toHaveProperty("payload");
  const cut = await get("max_rows=2&order=ascending&with_content=true");
  expect(cut).toMatchObject({ truncated: true, maxRows: 2 });
  expect(cut.data.map((m: { id: string }) => m.id)).toEqual([sent.paid, sent.paidUs]);
  expect(cut.data[0].payload).toEqual({ n: 1 });
  expect(cut.data[0].deliveryStatusCounts).toEqual({ delivered: 1 });
  const exact = await get("max_rows=3");
  expect(exact.truncated).toBe(false);
  const csv = await h.api.inject({
    method: "GET",
    url: `${V1}/app/${appId}/export/msg?max_rows=1`,
    headers: { authorization: `Bearer ${h.adminKey}` },
  });
  expect(csv.body.trimEnd().split("\r\n").at(-1)).toMatch(/^# truncated: .* cap of 1;/);
});

test("the attempt export: an endpoint's attempts, filtered, as CSV and JSON", async () => {
  const get = (q: string) =>
    h.api.inject({
      method: "GET",
      url: `${V1}/app/${appId}/export/attempt/endpoint/${okEp}?${q}`,
      headers: { authorization: `Bearer ${h.adminKey}` },
    });
  const csv = await get("event_types=order.paid&status_code_class=200");
  expect(csv.statusCode).toBe(200);
  const lines = csv.body.trimEnd().split("\r\n");
  expect(lines[0]).toBe(
    "id,msgId,endpointId,timestamp,status,responseStatusCode,errorKind,error,attemptNumber,responseDurationMs,trigger,url",
  );
  expect(
    lines
      .slice(1)
      .map((l) => l.split(",")[1])
      .sort(),
  ).toEqual([sent.paid, sent.paidUs].sort());
  expect(lines[1]).toContain(",success,200,");
  const json = JSON.parse((await get("format=json&max_rows=1")).body);
  expect(json).toMatchObject({ truncated: true, maxRows: 1 });
  expect(json.data).toHaveLength(1);
  const bad = await get("status_code_class=250");
  expect(bad.statusCode).toBe(422);
});
