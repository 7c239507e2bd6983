/**
 * The claim's `picked` step for one endpoint (src/queue/claim-deliveries.ts): which of its
 * due rows it takes, unordered ones and ordering keys' heads (docs/delivery.md, "Ordering"),
 * each found through an index made for it, so no claim reads the rows that wait behind
 * their key's head. A fragment of the claim's statement: it reads the claim's `room` row
 * as `r` (endpoint_id, in_flight, room) and its `$now`, `$loMs` and `$hiMs` parameters
 * (the window of periods: claim-window.ts).
 */
import { NOW_SQL } from "../db/sql/clock.ts";
import { inWindowSql } from "./claim-window.ts";

/**
 * Every search for rows to take is bounded to the claim's window of periods, [$loMs,
 * $hiMs) of message_ms (claim-window.ts): parameters, so PostgreSQL leaves out the other
 * partitions of deliveries when the plan starts. The window holds every queued row of the
 * claim's snapshot, or the claim takes nothing (claim-deliveries.ts, BOUNDS_SQL), so a
 * key's earlier row is never out of sight, and ORDER_HEAD_SQL's probe for an earlier queued
 * row of a key is bounded too. Its probe for an earlier dead letter is not: dead letters
 * are not queued, nothing bounds their periods (docs/history.md, "The claim's periods").
 */

/**
 * An ordered row is its key's head when no earlier row of the same (endpoint, key), by id
 * (the acceptance order), is still queued (pending, failed waiting for its retry, or in
 * flight), nor dead-lettered unless the endpoint's orderedDeadLetter is "skip"
 * (ORDER_HEAD_SQL: two backward probes of migration 0020's partial indexes per row). A row
 * another claim is taking is still queued in this statement's snapshot, so two claims never
 * take two rows of one key.
 *
 * Each probe is written as its index's nearest entry (the key's latest earlier id): only
 * deliveries_ordered_queued_idx and deliveries_ordered_dead_idx give that order without a
 * sort, so the plan reads them whatever the statistics say. Written as `exists`, a plan built
 * while the dead letters looked few took deliveries_dead_letter_order_idx (updated_at, id)
 * for the dead-letter probe, which reads every dead letter below the row's id (seen in
 * scenario 13's slow runs: docs/performance.md, "The claim's plan and the statistics").
 */
const earlierSql = (flag: "queued" | "dead_lettered") => `
          (select o.id from deliveries o
           where o.endpoint_id = d.endpoint_id and o.ordering_key = d.ordering_key
             and o.id < d.id and o.${flag}${flag === "queued" ? ` and ${inWindowSql("o")}` : ""}
           order by o.id desc
           limit 1)`;

const ORDER_HEAD_SQL = `
        ${earlierSql("queued")} is null
        and (${earlierSql("dead_lettered")} is null
             or not exists (select 1 from endpoints e
                            where e.id = d.endpoint_id and e.ordered_dead_letter is distinct from 'skip'))`;

/**
 * Unordered rows, oldest due first, through deliveries_unordered_due_idx (migration 0022:
 * no entry for a keyed row), stepping over its rows in flight.
 */
const UNORDERED_SQL = `
       select d.id, d.endpoint_id, d.next_attempt_at, d.message_ms
       from deliveries d
       where d.endpoint_id = r.endpoint_id
         and d.queued and d.ordering_key is null and ${inWindowSql("d")}
         and d.next_attempt_at <= ${NOW_SQL}
         and d.status <> 'in_flight'
       order by d.next_attempt_at
       limit greatest(r.room, 0)
       for update skip locked`;

/**
 * The endpoint's keys, each with its smallest id still queued: a skip scan of
 * deliveries_ordered_queued_idx (migration 0020), one probe per key, in key order. A
 * recursive CTE of KEYED_SQL, read as far as its readers go. Each probe reads its row
 * (for its period), so the head's status and due time come with it: KEY_HEADS_SQL passes
 * over a head in flight without reading it again.
 */
const KEYS_SQL = `
       k as (
         (select q.ordering_key, q.id, q.message_ms, q.status, q.next_attempt_at from deliveries q
          where q.endpoint_id = r.endpoint_id and q.queued and q.ordering_key is not null
            and ${inWindowSql("q")}
          order by q.ordering_key, q.id
          limit 1)
         union all
         (select n.ordering_key, n.id, n.message_ms, n.status, n.next_attempt_at
          from k
          cross join lateral (
            select q.ordering_key, q.id, q.message_ms, q.status, q.next_attempt_at from deliveries q
            where q.endpoint_id = r.endpoint_id and q.queued and q.ordering_key is not null
              and ${inWindowSql("q")}
              and q.ordering_key > k.ordering_key
            order by q.ordering_key, q.id
            limit 1) n)
       )`;

/**
 * Each key's head, from KEYS_SQL's `k`. The head is taken when it is due and not in
 * flight (in flight, its key has nothing to take: told from the walk's own row, so only
 * the heads it may take are read again by id, to be locked; in scenario 13's steady state
 * nine keys in ten have their head in flight: docs/performance.md, "The ordered claim
 * alone"), and no earlier row of its key is
 * dead-lettered, unless the endpoint's orderedDeadLetter is "skip": a probe of
 * deliveries_ordered_dead_idx per head (ORDER_HEAD_SQL's, nested under the endpoint's test,
 * so it never becomes a join over every dead letter). A head another claim took since this statement's
 * snapshot is rechecked in its newest version when it is locked, and dropped; the row
 * behind it is no head in this snapshot.
 */
const KEY_HEADS_SQL = `
       select d.id, d.endpoint_id, d.next_attempt_at, d.message_ms
       from k
       join deliveries d on d.id = k.id and d.message_ms = k.message_ms and ${inWindowSql("d")}
       where k.status <> 'in_flight'
         and k.next_attempt_at <= ${NOW_SQL}
         and d.queued
         and d.next_attempt_at <= ${NOW_SQL}
         and d.status <> 'in_flight'
         and not exists (
           select 1 from endpoints e
           where e.id = r.endpoint_id and e.ordered_dead_letter is distinct from 'skip'
             and ${earlierSql("dead_lettered")} is not null)
       order by d.next_attempt_at
       limit greatest(r.room, 0)
       for update of d skip locked`;

/**
 * Whether the endpoint has a keyed row queued: one probe of deliveries_ordered_queued_idx,
 * written as the index's first entry, so it is a probe of the index, never a scan.
 */
const HAS_KEYS_SQL = `
      (select q.id from deliveries q
       where q.endpoint_id = r.endpoint_id and q.queued and q.ordering_key is not null
            and ${inWindowSql("q")}
       order by q.ordering_key, q.id
       limit 1) is not null`;

/**
 * The rows of an endpoint with a keyed row queued:
 *
 * - if it has at most in_flight + 2 x room keys queued (KEYS_SQL's walk stops one key past
 *   that), the rows come from UNORDERED_SQL and KEY_HEADS_SQL at once: one probe per key
 *   whatever the backlog's depth, and nothing read twice (scenario 13's shape, 10 deep
 *   keys per endpoint: docs/performance.md);
 * - else its first in_flight + 2 x room due rows in due order through deliveries_due_idx
 *   (in-flight ones among them: they keep their place), the unordered rows and keys' heads
 *   of them (ORDER_HEAD_SQL) taken: where keys are many and shallow, the heads come first;
 * - if those few rows were not all its due rows and gave less than the room (fewer
 *   claimable heads than room under a deep backlog: walking on would read every row
 *   waiting behind a head), the rows come instead from UNORDERED_SQL and KEY_HEADS_SQL,
 *   one probe per key whatever the backlog's depth. The walk's rows are among these (the
 *   oldest claimable), so none it locked is left out.
 */
const KEYED_SQL = `
    with recursive ${KEYS_SQL},
    few as (
      select count(*) <= r.in_flight + 2 * greatest(r.room, 0) as few_keys
      from (select 1 from k limit r.in_flight + 2 * greatest(r.room, 0) + 1) c
    ),
    scan as (
      select d.id, d.next_attempt_at, d.message_ms,
             d.status <> 'in_flight' and (d.ordering_key is null or (${ORDER_HEAD_SQL})) as takes
      from deliveries d
      where d.endpoint_id = r.endpoint_id
        and d.queued and ${inWindowSql("d")}
        and d.next_attempt_at <= ${NOW_SQL}
      order by d.next_attempt_at
      limit r.in_flight + 2 * greatest(r.room, 0)
    ),
    walked as (
      select d.id, d.endpoint_id, s.next_attempt_at, d.message_ms
      from scan s
      join deliveries d on d.id = s.id and d.message_ms = s.message_ms and ${inWindowSql("d")}
      where s.takes
        and d.queued
        and d.next_attempt_at <= ${NOW_SQL}
        and d.status <> 'in_flight'
      order by s.next_attempt_at
      limit greatest(r.room, 0)
      for update of d skip locked
    ),
    way as (
      select (select few_keys from few)
             or ((select count(*) from scan) = r.in_flight + 2 * greatest(r.room, 0)
                 and (select count(*) from walked) < greatest(r.room, 0)) as per_key
    )
    select w.id, w.endpoint_id, w.next_attempt_at, w.message_ms from walked w
    where not (select per_key from way)
    union all
    select u.id, u.endpoint_id, u.next_attempt_at, u.message_ms from (${UNORDERED_SQL}) u
    where (select per_key from way)
    union all
    select k.id, k.endpoint_id, k.next_attempt_at, k.message_ms from (${KEY_HEADS_SQL}) k
    where (select per_key from way)
    order by 3
    limit greatest(r.room, 0)`;

/**
 * An endpoint's rows to take (docs/delivery.md, "Ordering"), its oldest due first, up to its
 * room, each locked as it is taken (skipping rows another transaction holds): an endpoint
 * without a keyed row queued takes UNORDERED_SQL's rows, as cheap as ever (the keyed part's
 * steps are never run for it: each branch is gated by the probe, evaluated before it);
 * one with keyed rows, KEYED_SQL's. (The probe evaluated once for both branches, in a step
 * of its own, was tried: 4% of the ordered claim's buffers, none measurable of the
 * unordered one's, and left out while scenario 3 under load could not tell it apart:
 * docs/performance.md, "The ordered claim alone".)
 */
export const PICK_SQL = `
    select u.id, u.endpoint_id, u.next_attempt_at, u.message_ms from (${UNORDERED_SQL}) u
    where not ${HAS_KEYS_SQL}
    union all
    select p.id, p.endpoint_id, p.next_attempt_at, p.message_ms from (${KEYED_SQL}) p
    where ${HAS_KEYS_SQL}`;
