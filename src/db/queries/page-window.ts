/** The rows of one page of a keyset-paginated listing (api/pagination.ts plans it). */
export interface PageWindow<Cursor = string> {
  /** compare the sort key with this (`id > cursor`), or null for the first page */
  cursor: Cursor | null;
  /** one of two fixed strings, so safe to write into the statement */
  op: ">" | "<";
  direction: "asc" | "desc";
  /** how many rows to fetch (one more than the page shows, to know whether more follow) */
  limit: number;
}
