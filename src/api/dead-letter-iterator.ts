/**
 * The iterator of GET /dead-letters: the position of a page's last row, the list being
 * ordered by when each delivery died (newest first) and then by delivery. It reads
 * `dlv_Q3fZ08kTb1x.1741608000123456`: the delivery's id as shown (docs/public-ids.md) and
 * its time of death in microseconds since 1970. The time travels in the iterator, not
 * looked up again, so the next page starts where the last one ended even if that delivery
 * was requeued meanwhile.
 *
 * A bare delivery id (the iterator before the list was ordered by death) is still taken:
 * its position is read from the row, which is exact while it stays dead.
 */
import type { Pool } from "../db/pool.ts";
import { byDeliveryId, deliveryIdRangeSql } from "../db/sql/delivery-id-blocks.ts";
import type { DeadLetterPosition } from "../ops/dead-letters.ts";
import type { Principal } from "./auth.ts";
import { badRequest } from "./errors.ts";
import { cursorKeyOf } from "./public-id-input.ts";

/** The iterator naming `position`; `shownId` formats a delivery's row key as the API shows it. */
export function deadLetterIterator(
  position: DeadLetterPosition,
  shownId: (deliveryId: number) => string,
): string {
  return `${shownId(position.deliveryId)}.${position.deadAtMicros}`;
}

/** The position an iterator names: 400 when it names none. */
export async function deadLetterPositionOf(
  pool: Pool,
  principal: Principal,
  iterator: string,
): Promise<DeadLetterPosition> {
  const dot = iterator.lastIndexOf(".");
  const id = dot < 0 ? iterator : iterator.slice(0, dot);
  const deliveryId = await cursorKeyOf(pool, principal, "delivery", id);
  if (dot >= 0) {
    const micros = iterator.slice(dot + 1);
    // up to 16 digits: any time before the year 2255, and well inside a bigint
    if (!/^[0-9]{1,16}$/.test(micros)) throw badRequest("iterator is not valid for this listing");
    return { deadAtMicros: micros, deliveryId };
  }
  const rows = await byDeliveryId(
    pool,
    deliveryId,
    async ([lo, hi]) =>
      (
        await pool.query(
          `select (extract(epoch from updated_at) * 1000000)::bigint::text as micros
           from deliveries
           where id = $1::bigint and ${deliveryIdRangeSql("", "$3", "$4")}
             and ($2::text is null or app_id = $2::text)`,
          [deliveryId, principal.role === "app" ? principal.appId : null, lo, hi],
        )
      ).rows,
    (r) => r.length > 0,
  );
  if (rows.length === 0) throw badRequest("iterator is not valid for this listing");
  return { deadAtMicros: rows[0].micros, deliveryId };
}
