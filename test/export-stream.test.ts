/**
 * An export of more rows than its cap (docs/browse.md, "Export"): 200,000 seeded messages
 * exported over real HTTP with the cap at 100,000 arrive as a chunked stream of many
 * pieces (no Content-Length: nothing was assembled first), hold exactly the cap's rows and
 * end by saying they were cut.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { bulkSeed } from "./helpers/bulk-seed.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { newApp, V1 } from "./helpers/seeded-deliveries.ts";

const SEEDED = 200_000;

let h: Harness;
let base: string;
let appId: string;

beforeAll(async () => {
  h = await startHarness();
  appId = await newApp(h);
  // ids that sort as the messages were made, one event type in ten "rare"; loaded as a
  // bulk load is, then analyzed as autovacuum would after such an insert: the planner then
  // walks the (app_id, id) index
  await bulkSeed(h.db.pool, ["messages"], async (db) => {
    await db.query(
      `insert into messages (id, app_id, event_type, payload, channels, created_at)
       select 'msg_seed' || lpad(g::text, 10, '0'), $1::text,
              case when g % 10 = 0 then 'rare' else 'common' end, '{"n":1}',
              array['c' || (g % 5)], now() - make_interval(secs => ($2::integer - g) / 1000.0)
       from generate_series(1, $2::integer) g`,
      [appId, SEEDED],
    );
  });
  await h.api.listen({ host: "127.0.0.1", port: 0 });
  const addr = h.api.server.address();
  if (!addr || typeof addr === "string") throw new Error("no port");
  base = `http://127.0.0.1:${addr.port}`;
}, 120_000);
afterAll(() => h?.close());

async function exportOf(query: string) {
  const res = await fetch(`${base}${V1}/app/${appId}/export/msg?${query}`, {
    headers: { authorization: `Bearer ${h.adminKey}` },
  });
  expect(res.status).toBe(200);
  let chunks = 0;
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    chunks++;
    text += decoder.decode(chunk, { stream: true });
  }
  return { res, chunks, text };
}

test("200,000 matching messages: 100,000 rows streamed, then the cut said", async () => {
  const { res, chunks, text } = await exportOf("");
  expect(res.headers.get("content-length")).toBeNull();
  expect(res.headers.get("transfer-encoding")).toBe("chunked");
  expect(res.headers.get("x-hookrelay-export-max-rows")).toBe("100000");
  // a batch of 1,000 rows is one write: a stream of about 100, never one piece
  expect(chunks).toBeGreaterThan(20);
  const lines = text.trimEnd().split("\r\n");
  expect(lines[0]).toMatch(/^id,timestamp,/);
  expect(lines.at(-1)).toMatch(/^# truncated: .* cap of 100000;/);
  const rows = lines.slice(1, -1);
  expect(rows).toHaveLength(100_000);
  // newest first, each once
  expect(rows[0]).toMatch(/^msg_seed0000200000,/);
  expect(rows.at(-1)).toMatch(/^msg_seed0000100001,/);
  expect(new Set(rows.map((r) => r.split(",")[0])).size).toBe(100_000);
}, 120_000);

test("filtered below the cap: every match, and no cut", async () => {
  const { text } = await exportOf("format=json&event_types=rare&channel=c0");
  const body = JSON.parse(text);
  expect(body.truncated).toBe(false);
  // g % 10 = 0 implies g % 5 = 0: every rare message is in c0
  expect(body.data).toHaveLength(SEEDED / 10);
  expect(body.data.every((m: { eventType: string }) => m.eventType === "rare")).toBe(true);
}, 120_000);
