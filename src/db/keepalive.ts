/**
 * TCP keepalive of hookrelay's PostgreSQL connections (docs/worker-liveness.md, "A machine
 * that vanishes"). A worker's liveness lock is only as good as PostgreSQL's knowledge that
 * the worker's connection is gone: a process that dies on a running machine closes its
 * sockets at once, but a machine that loses power or network closes nothing, and the
 * server learns of it only from keepalive probes (an idle connection) or from unanswered
 * retransmissions (a connection with data in flight). These settings bound both.
 */

/** Probing starts after `idleS` of silence, every `intervalS`, and gives up after `count`. */
export const KEEPALIVE = { idleS: 5, intervalS: 2, count: 3 } as const;

/** Seconds after which a silent peer is declared dead: idle + interval x count (11 s). */
export const KEEPALIVE_DEAD_AFTER_S = KEEPALIVE.idleS + KEEPALIVE.intervalS * KEEPALIVE.count;

/**
 * node-postgres client options: keepalive probes on our side of every connection, after
 * `idleS` of silence (the probe interval and count are the operating system's).
 */
export const clientKeepAlive = {
  keepAlive: true,
  keepAliveInitialDelayMillis: KEEPALIVE.idleS * 1_000,
} as const;

/**
 * The server side, as PostgreSQL settings: keepalive probes on an idle connection, and
 * tcp_user_timeout (ms) for one whose sent data goes unacknowledged, both giving up after
 * KEEPALIVE_DEAD_AFTER_S. Set server-wide in embedded mode (postgres-cluster.ts) and for
 * its own session by every liveness connection (queue/worker-lock.ts), so they hold on an
 * external PostgreSQL too.
 */
export const serverKeepaliveSettings: Readonly<Record<string, number>> = {
  tcp_keepalives_idle: KEEPALIVE.idleS,
  tcp_keepalives_interval: KEEPALIVE.intervalS,
  tcp_keepalives_count: KEEPALIVE.count,
  tcp_user_timeout: KEEPALIVE_DEAD_AFTER_S * 1_000,
};
