/**
 * Alerts (docs/operations.md, Alerts): conditions an operator must hear about. Computed
 * from the live state on demand; the maintenance runner also keeps them in the alerts table
 * (open until the condition clears) so that "since" survives and new/resolved alerts can be
 * posted.
 *
 * | kind                  | severity | subject  | raised when                                          |
 * | dead_letters_growing  | warning  | endpoint | more dead letters in the last window than the one before, and at least the minimum |
 * | oldest_pending        | critical | queue    | a delivery has waited longer than the threshold (30 min) |
 * | endpoint_slow         | warning  | endpoint | p95 over the slow threshold (with enough samples)    |
 * | circuit_open          | critical | endpoint | the circuit is open or half-open                    |
 * | endpoint_gone         | critical | endpoint | the receiver answered 410 and the endpoint was disabled |
 */
import type { AlertConfig, DeliveryDefaults, HealthConfig } from "../config.ts";
import type { Pool, Queryable } from "../db/pool.ts";
import { queryGeneric } from "../db/queries/generic-plan.ts";
import { queuedBoundSql, queuedFromMs } from "../db/queries/queue-bounds.ts";
import { waitingSinceSql } from "../db/sql/delivery-states.ts";
import { writeIsolating } from "../db/write-isolating.ts";
import { whileDisabledOf, whileDisabledText } from "../domain/while-disabled.ts";

export interface Alert {
  kind:
    | "dead_letters_growing"
    | "oldest_pending"
    | "endpoint_slow"
    | "circuit_open"
    | "endpoint_gone";
  severity: "warning" | "critical";
  subject: { type: "endpoint" | "queue"; id: string; appId: string | null };
  since: string;
  message: string;
}

const minutes = (ms: number) => Math.round(ms / 60_000);

/**
 * What the alerts read of the configuration; `delivery.whileDisabled` (default "hold") is
 * what a gone endpoint's alert says happens to messages meanwhile.
 */
export interface AlertSettings {
  alerts: AlertConfig;
  health: HealthConfig;
  delivery?: Pick<DeliveryDefaults, "whileDisabled">;
}

/** Dead letters per endpoint in the last two windows ($1 ms), `scope` narrowing them. */
const GROWING_SQL = (scope: string) => `
  select d.endpoint_id, min(d.app_id) as app_id, e.url,
         (count(*) filter (where d.updated_at >= now() - $1::bigint * interval '1 millisecond'))::int as recent,
         (count(*) filter (where d.updated_at < now() - $1::bigint * interval '1 millisecond'))::int as before,
         min(d.updated_at) filter (where d.updated_at >= now() - $1::bigint * interval '1 millisecond') as since
  from deliveries d join endpoints e on e.id = d.endpoint_id
  where d.dead_lettered and d.updated_at >= now() - 2 * $1::bigint * interval '1 millisecond' ${scope}
  group by d.endpoint_id, e.url`;

/** The alerts that hold right now, optionally for one app. */
export async function currentAlerts(
  db: Queryable,
  config: AlertSettings,
  appId: string | null = null,
): Promise<Alert[]> {
  const { alerts: a, health } = config;
  const alerts: Alert[] = [];

  // deaths of every period (no bound on where a dead letter is): a named statement per
  // scope, run with its generic plan (db/queries/generic-plan.ts)
  const growing = await queryGeneric(
    db,
    appId === null
      ? {
          name: "hookrelay_alerts_dead_growing",
          text: GROWING_SQL(""),
          values: [a.deadLetterWindowMs],
        }
      : {
          name: "hookrelay_alerts_dead_growing_app",
          text: GROWING_SQL("and d.app_id = $2::text"),
          values: [a.deadLetterWindowMs, appId],
        },
  );
  for (const r of growing.rows) {
    if (r.recent >= a.deadLetterMin && r.recent > r.before) {
      alerts.push({
        kind: "dead_letters_growing",
        severity: "warning",
        subject: { type: "endpoint", id: r.endpoint_id, appId: r.app_id },
        since: r.since.toISOString(),
        message: `${r.recent} deliveries to ${r.url} died in the last ${minutes(a.deadLetterWindowMs)} min (${r.before} in the ${minutes(a.deadLetterWindowMs)} min before).`,
      });
    }
  }

  const oldest = await db.query(
    `select min(${waitingSinceSql("deliveries")}) as at from deliveries
     where queued and ($1::text is null or app_id = $1::text)
       and ${queuedBoundSql("deliveries", "$2")}`,
    [appId, await queuedFromMs(db)],
  );
  const oldestAt: Date | null = oldest.rows[0].at;
  if (oldestAt && Date.now() - oldestAt.getTime() > a.oldestPendingMs) {
    alerts.push({
      kind: "oldest_pending",
      severity: "critical",
      subject: { type: "queue", id: appId ?? "all", appId },
      since: new Date(oldestAt.getTime() + a.oldestPendingMs).toISOString(),
      message: `The oldest undelivered message has waited ${minutes(Date.now() - oldestAt.getTime())} min (threshold ${minutes(a.oldestPendingMs)} min).`,
    });
  }

  const endpoints = await db.query(
    `select e.id, e.app_id, e.url, e.disabled, e.disabled_reason, e.while_disabled, e.updated_at,
            h.circuit_state, h.opened_at, h.slow, h.p95_ms, h.stats_at, h.consecutive_failures
     from endpoints e join endpoint_health h on h.endpoint_id = e.id
     where (h.slow or h.circuit_state <> 'closed' or e.disabled_reason = 'gone')
       and ($1::text is null or e.app_id = $1::text)
     order by e.id`,
    [appId],
  );
  for (const r of endpoints.rows) {
    const subject = { type: "endpoint" as const, id: r.id, appId: r.app_id };
    if (r.circuit_state !== "closed") {
      alerts.push({
        kind: "circuit_open",
        severity: "critical",
        subject,
        since: (r.opened_at ?? r.updated_at).toISOString(),
        message: `The circuit of ${r.url} is ${r.circuit_state.replace("_", "-")} after ${r.consecutive_failures} consecutive failures; nothing is sent to it until a probe succeeds.`,
      });
    }
    if (r.slow) {
      alerts.push({
        kind: "endpoint_slow",
        severity: "warning",
        subject,
        since: (r.stats_at ?? r.updated_at).toISOString(),
        message: `${r.url} is slow: p95 ${r.p95_ms} ms over the last ${minutes(health.windowMs) / 60} h (threshold ${health.slowP95Ms} ms).`,
      });
    }
    if (r.disabled && r.disabled_reason === "gone") {
      alerts.push({
        kind: "endpoint_gone",
        severity: "critical",
        subject,
        since: r.updated_at.toISOString(),
        // the disabled-endpoint contract (domain/while-disabled.ts)
        message: `${r.url} answered 410 Gone and was disabled; ${whileDisabledText(
          whileDisabledOf(r.while_disabled, config.delivery?.whileDisabled ?? "hold"),
        )}.`,
      });
    }
  }
  // An alert already on record keeps the time it was first raised.
  const open = await db.query(
    "select kind, subject_id, since from alerts where resolved_at is null",
  );
  const since = new Map(
    open.rows.map((r) => [`${r.kind}|${r.subject_id}`, (r.since as Date).toISOString()]),
  );
  return alerts.map((a) => ({ ...a, since: since.get(keyOf(a)) ?? a.since }));
}

const keyOf = (a: { kind: string; subject: { id: string } }) => `${a.kind}|${a.subject.id}`;

/**
 * Brings the alerts table in line with the current alerts; returns what was raised and
 * what resolved since the last call (maintenance; one runner at a time).
 */
export async function syncAlerts(
  pool: Pool,
  config: AlertSettings,
  /** an alert PostgreSQL refused to store (docs/reliability.md, Poison rows) */
  onRefused: (alert: Alert, err: unknown) => void = () => {},
): Promise<{ raised: Alert[]; resolved: Alert[] }> {
  const now = await currentAlerts(pool, config);
  const open = await pool.query(
    `select id, kind, subject_type, subject_id, app_id, severity, message, since from alerts where resolved_at is null`,
  );
  const openKeys = new Map(open.rows.map((r) => [`${r.kind}|${r.subject_id}`, r]));
  const nowKeys = new Set(now.map(keyOf));
  const raised = now.filter((a) => !openKeys.has(keyOf(a)));
  const resolvedRows = open.rows.filter((r) => !nowKeys.has(`${r.kind}|${r.subject_id}`));
  const refused = new Set<Alert>();
  await writeIsolating(
    raised,
    (rows) =>
      pool.query(
        `insert into alerts (kind, subject_type, subject_id, app_id, severity, message, since)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
         on conflict (kind, subject_id) where resolved_at is null do nothing`,
        [
          rows.map((a) => a.kind),
          rows.map((a) => a.subject.type),
          rows.map((a) => a.subject.id),
          rows.map((a) => a.subject.appId),
          rows.map((a) => a.severity),
          rows.map((a) => a.message),
          rows.map((a) => a.since),
        ],
      ),
    async (alert, err) => {
      refused.add(alert);
      onRefused(alert, err);
    },
  );
  if (resolvedRows.length > 0) {
    await pool.query("update alerts set resolved_at = now() where id = any ($1::bigint[])", [
      resolvedRows.map((r) => r.id),
    ]);
  }
  return {
    raised: raised.filter((a) => !refused.has(a)),
    resolved: resolvedRows.map((r) => ({
      kind: r.kind,
      severity: r.severity,
      subject: { type: r.subject_type, id: r.subject_id, appId: r.app_id },
      since: r.since.toISOString(),
      message: r.message,
    })),
  };
}
