/**
 * Cursor pagination in Svix's shape: `{ data, iterator, prevIterator, done }`.
 * The iterator is the id of the last item of a page; `prevIterator` is the first item's
 * id prefixed with "-", which pages backwards. Ids sort by creation time.
 */
import type { PageWindow } from "../db/queries/page-window.ts";
import { looksLikeId } from "../ids.ts";
import { badRequest } from "./errors.ts";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 250;

export interface PageQuery {
  limit?: number;
  iterator?: string;
  order?: "ascending" | "descending";
}

export interface PagePlan {
  limit: number;
  /** compare the id column with this ("id > $cursor"), or null for the first page */
  cursor: string | null;
  op: ">" | "<";
  direction: "asc" | "desc";
  /** the rows come back in reverse and must be flipped (backwards paging) */
  reverse: boolean;
  /** the rows to fetch: `limit + 1`, so toPage knows whether more follow */
  window: PageWindow;
}

export interface Page<T> {
  data: T[];
  iterator: string | null;
  prevIterator: string | null;
  done: boolean;
}

export const pageQuerySchema = {
  limit: { type: "integer", minimum: 1, maximum: MAX_LIMIT },
  iterator: { type: "string", maxLength: 128 },
  order: { type: "string", enum: ["ascending", "descending"] },
} as const;

/**
 * Plans the query for a page; `natural` is the listing's default order. With `idPrefix`,
 * an iterator must be an id of that kind.
 */
export function planPage(
  q: PageQuery,
  natural: "ascending" | "descending",
  idPrefix?: string,
): PagePlan {
  const ascending = (q.order ?? natural) === "ascending";
  const backwards = q.iterator?.startsWith("-") ?? false;
  const cursor = q.iterator ? (backwards ? q.iterator.slice(1) : q.iterator) : null;
  if (cursor !== null && (cursor.length === 0 || (idPrefix && !looksLikeId(cursor, idPrefix)))) {
    throw badRequest("iterator is not valid for this listing");
  }
  const forwardAsc = ascending !== backwards;
  const limit = q.limit ?? DEFAULT_LIMIT;
  const op = forwardAsc ? ">" : "<";
  const direction = forwardAsc ? "asc" : "desc";
  return {
    limit,
    cursor,
    op,
    direction,
    reverse: backwards,
    window: { cursor, op, direction, limit: limit + 1 },
  };
}

/** Builds the page from `limit + 1` fetched rows. */
export function toPage<R, T>(
  rows: R[],
  plan: PagePlan,
  idOf: (row: R) => string,
  map: (row: R) => T,
): Page<T> {
  const more = rows.length > plan.limit;
  const kept = more ? rows.slice(0, plan.limit) : rows;
  if (plan.reverse) kept.reverse();
  const first = kept[0];
  const last = kept[kept.length - 1];
  return {
    data: kept.map(map),
    iterator: last ? idOf(last) : plan.reverse ? plan.cursor : null,
    prevIterator: first ? `-${idOf(first)}` : null,
    done: plan.reverse ? false : !more,
  };
}
