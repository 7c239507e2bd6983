/**
 * The maintenance runner's lock as a lease row (migration 0015, docs/database.md): for a
 * process reached only through a transaction pooler, where a session advisory lock would
 * stay on a server connection the pooler shares. A tick takes the lease when it is free
 * or lapsed, renews it every third of its length while the tasks run, and gives it up at
 * the end. A holder that dies keeps it until it lapses (a minute by default): the
 * maintenance tasks then wait that long, nothing else does. Each statement is its own
 * short transaction.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Pool } from "../db/pool.ts";
import type { Logger } from "../logger.ts";
import type { MaintenanceLock } from "./maintenance.ts";

const TAKE_SQL = `
insert into maintenance_lease (holder, expires_at)
values ($1::text, now() + $2::integer * interval '1 millisecond')
on conflict (singleton) do update
  set holder = excluded.holder, expires_at = excluded.expires_at
  where maintenance_lease.expires_at <= now() or maintenance_lease.holder = excluded.holder
returning holder`;

const RENEW_SQL = `
update maintenance_lease set expires_at = now() + $2::integer * interval '1 millisecond'
where holder = $1::text`;

export function leaseLock(pool: Pool, logger: Logger, leaseMs = 60_000): MaintenanceLock {
  const holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  return {
    async tryTake() {
      const { rowCount } = await pool.query(TAKE_SQL, [holder, leaseMs]);
      if (!rowCount) return null;
      const renew = setInterval(() => {
        pool.query(RENEW_SQL, [holder, leaseMs]).then(
          (r) => {
            if (!r.rowCount) logger.warn({ holder }, "maintenance lease lost while running");
          },
          (err) => logger.warn({ err }, "maintenance lease renewal failed"),
        );
      }, leaseMs / 3);
      renew.unref();
      return async () => {
        clearInterval(renew);
        await pool.query("delete from maintenance_lease where holder = $1::text", [holder]);
      };
    },
  };
}
