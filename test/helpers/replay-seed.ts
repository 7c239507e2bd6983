/**
 * Messages (and, when asked, their delivery to one endpoint) seeded straight into the
 * database for the background-task tests: chosen event types, channels, tags, creation
 * times and delivery statuses, in one statement.
 */
import type { Pool } from "../../src/db/pool.ts";
import { ID_PREFIX, newId } from "../../src/ids.ts";
import type { Status } from "./seeded-deliveries.ts";

export interface SeedMessage {
  eventType?: string;
  channels?: string[] | null;
  tags?: string[] | null;
  /** default: now */
  createdAt?: Date;
  /** a delivery to `endpointId` in this status; none when absent */
  status?: Status;
  code?: number | null;
}

/** Seeds the messages of `appId` (ids in order), each with its row to `endpointId` if asked. */
export async function seedMessages(
  pool: Pool,
  appId: string,
  endpointId: string,
  rows: SeedMessage[],
): Promise<string[]> {
  const ids = rows.map(() => newId(ID_PREFIX.message));
  await pool.query(
    `with i as (
       select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[],
                            $6::text[], $7::int[])
         as i(id, event_type, channels, tags, created_at, status, code)
     ),
     m as (
       insert into messages (id, app_id, event_type, payload, channels, tags, created_at)
       select i.id, $8::text, i.event_type, '{"seeded":true}', i.channels::text[], i.tags::text[],
              i.created_at
       from i
     )
     -- a failed row waits a day for its retry: only a replay sends it during a test
     insert into deliveries (message_id, endpoint_id, app_id, status, attempt_count, max_attempts,
                             last_status_code, next_attempt_at, created_at, updated_at)
     select i.id, $9::text, $8::text, i.status, case when i.status = 'pending' then 0 else 1 end,
            5, i.code,
            case when i.status = 'failed' then now() + interval '1 day' else i.created_at end,
            i.created_at, i.created_at
     from i where i.status is not null`,
    [
      ids,
      rows.map((r) => r.eventType ?? "seeded.event"),
      rows.map((r) => (r.channels ? `{${r.channels.join(",")}}` : null)),
      rows.map((r) => (r.tags ? `{${r.tags.join(",")}}` : null)),
      rows.map((r) => r.createdAt ?? new Date()),
      rows.map((r) => r.status ?? null),
      rows.map((r) => r.code ?? null),
      appId,
      endpointId,
    ],
  );
  return ids;
}

/** The endpoint's rows as the tests read them, by message id. */
export async function rowsOf(pool: Pool, endpointId: string) {
  const { rows } = await pool.query(
    `select message_id, status, trigger, attempt_count,
            extract(epoch from next_attempt_at - updated_at)::float8 as due_in_s
     from deliveries where endpoint_id = $1::text`,
    [endpointId],
  );
  return new Map(rows.map((r) => [r.message_id as string, r]));
}
