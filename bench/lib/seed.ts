/**
 * Test data in the shapes hookrelay writes itself: one app per endpoint (so a message fans
 * out to exactly one delivery), endpoint secrets, and messages + deliveries with the same
 * columns `enqueueMessage` fills (see src/queue/enqueue-message.ts), inserted set-wise in
 * one transaction so that workers see the whole batch at once.
 */
import { type Pool, withTransaction } from "../../src/db/pool.ts";
import { WORK_CHANNEL } from "../../src/db/work-channel.ts";
import { ID_PREFIX, newId } from "../../src/ids.ts";

export interface Tenant {
  appId: string;
  appUid: string;
  endpointId: string;
  url: string;
}

/**
 * Messages of a scenario: message i goes to endpoint i % endpoints. Ordered (scenario 13):
 * message i has key `k<i % keys>` and goes to endpoint (i % keys) % endpoints, so each key
 * lives on one endpoint and, with keys a multiple of endpoints, every endpoint has
 * keys / endpoints of them (fewer keys than endpoints: only the first `keys` endpoints).
 */
export interface Messages {
  ids: string[];
  endpoint: number[];
  payloads: string[];
  /** ordering key per message; absent: unordered */
  keys?: string[];
}

export const EVENT_TYPE = "order.paid";

/** A realistic ~200-byte event, different for every i. */
export function payloadFor(i: number): string {
  return JSON.stringify({
    type: EVENT_TYPE,
    seq: i,
    order: { id: `ord_${100000 + i}`, total: "149.90", currency: "EUR", items: 3 },
    customer: { id: `cus_${i % 997}`, country: "DE", tier: "gold" },
    occurredAt: "2025-01-01T12:00:00.000Z",
  });
}

export function makeMessages(
  count: number,
  endpoints: number,
  offset = 0,
  keys: number | null = null,
): Messages {
  const m: Messages = { ids: [], endpoint: [], payloads: [] };
  if (keys !== null) m.keys = [];
  for (let i = 0; i < count; i++) {
    m.ids.push(newId(ID_PREFIX.message));
    m.endpoint.push(keys === null ? i % endpoints : (i % keys) % endpoints);
    m.payloads.push(payloadFor(offset + i));
    m.keys?.push(`k${i % (keys ?? 1)}`);
  }
  return m;
}

/** One app (uid bench-i) with one endpoint (url i, the given secret) per url. */
export async function createTenants(
  pool: Pool,
  urls: string[],
  secret: string,
  timeoutMs: number | null = null,
): Promise<Tenant[]> {
  const tenants: Tenant[] = urls.map((url, i) => ({
    appId: newId(ID_PREFIX.app),
    appUid: `bench-${i}`,
    endpointId: newId(ID_PREFIX.endpoint),
    url,
  }));
  const col = <T>(f: (t: Tenant) => T) => tenants.map(f);
  await pool.query(
    `insert into applications (id, uid, name) select a, u, u from unnest($1::text[], $2::text[]) as t(a, u)`,
    [col((t) => t.appId), col((t) => t.appUid)],
  );
  await pool.query(
    `insert into endpoints (id, app_id, url, timeout_ms)
     select e, a, u, $4::integer from unnest($1::text[], $2::text[], $3::text[]) as t(e, a, u)`,
    [col((t) => t.endpointId), col((t) => t.appId), col((t) => t.url), timeoutMs],
  );
  await pool.query(
    `insert into endpoint_secrets (endpoint_id, secret) select e, $2::text from unnest($1::text[]) as t(e)`,
    [col((t) => t.endpointId), secret],
  );
  return tenants;
}

/**
 * Inserts the messages and their deliveries in one transaction and NOTIFYs the workers,
 * exactly as many `enqueueMessage` calls would leave the tables (next_attempt_at = now();
 * an ordering key on the message and its delivery, as the fan-out copies it: migration
 * 0020). Delivery ids follow the messages' order, which is then each key's order.
 */
export async function seedMessages(
  pool: Pool,
  tenants: Tenant[],
  m: Messages,
  maxAttempts = 5,
  { traced = false }: { traced?: boolean } = {},
): Promise<void> {
  await withTransaction(pool, async (client) => {
    const chunk = 10_000;
    for (let start = 0; start < m.ids.length; start += chunk) {
      const ids = m.ids.slice(start, start + chunk);
      const targets = m.endpoint.slice(start, start + chunk).map((e) => tenants[e]!);
      const keys = m.keys?.slice(start, start + chunk) ?? ids.map(() => null);
      await client.query(
        // traced (scenario 15): each message a producer's traceparent of its own trace
        // message_ms: the millisecond the id carries, as the API writes it, so the rows go to
        // today's period of messages and deliveries as in production (docs/history.md)
        `insert into messages (id, app_id, event_type, payload, ordering_key, traceparent, message_ms)
         select id, app, $3::text, payload, k,
                case when $6::boolean
                     then '00-' || md5(id) || '-' || left(md5(id || '.'), 16) || '-01' end,
                hookrelay_message_ms(id)
         from unnest($1::text[], $2::text[], $4::text[], $5::text[]) as t(id, app, payload, k)`,
        [
          ids,
          targets.map((t) => t.appId),
          EVENT_TYPE,
          m.payloads.slice(start, start + chunk),
          keys,
          traced,
        ],
      );
      // "with ordinality ... order by n": the rows' ids follow the messages' order
      await client.query(
        `insert into deliveries (message_id, endpoint_id, app_id, max_attempts, next_attempt_at, ordering_key, message_ms)
         select id, ep, app, $4::integer, now(), k, hookrelay_message_ms(id)
         from unnest($1::text[], $2::text[], $3::text[], $5::text[]) with ordinality as t(id, ep, app, k, n)
         order by n`,
        [ids, targets.map((t) => t.endpointId), targets.map((t) => t.appId), maxAttempts, keys],
      );
    }
    await client.query(`select pg_notify('${WORK_CHANNEL}', '')`);
  });
}

/** Delivery and attempt counts: every delivered row must have its attempt row (durability). */
export async function deliveryCounts(
  pool: Pool,
): Promise<{ delivered: number; attempts: number; other: number }> {
  const { rows } = await pool.query(
    `select (select count(*) from deliveries where status = 'delivered')::int as delivered,
            (select count(*) from deliveries where status <> 'delivered')::int as other,
            (select count(*) from attempts)::int as attempts`,
  );
  return rows[0];
}
