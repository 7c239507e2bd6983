/**
 * The configuration files of the failover scenario's HA PostgreSQL (faults/lib/ha-cluster.ts):
 * Patroni's YAML per node and haproxy's, as Patroni's documentation sets them up, with
 * Patroni's timings made short so a failover takes seconds (docs/reliability.md).
 */
export interface PatroniSettings {
  /** leader key lifetime in etcd (s) */
  ttl: number;
  /** Patroni's HA loop period (s) */
  loopWait: number;
  /** how long Patroni retries etcd and PostgreSQL before it demotes (s) */
  retryTimeout: number;
}

export const FAST_PATRONI: PatroniSettings = { ttl: 10, loopWait: 2, retryTimeout: 5 };

interface NodeLike {
  name: string;
  dir: string;
  pgPort: number;
  apiPort: number;
}

/** JSON is YAML: Patroni reads this as its configuration file. */
export function patroniConfig(o: {
  node: NodeLike;
  etcdPort: number;
  password: string;
  settings: PatroniSettings;
  binDir: string;
}): string {
  const { node, settings } = o;
  const config = {
    scope: "hookrelay-faults",
    name: node.name,
    log: { level: "INFO" },
    restapi: {
      listen: `127.0.0.1:${node.apiPort}`,
      connect_address: `127.0.0.1:${node.apiPort}`,
    },
    etcd3: { hosts: `127.0.0.1:${o.etcdPort}` },
    bootstrap: {
      dcs: {
        ttl: settings.ttl,
        loop_wait: settings.loopWait,
        retry_timeout: settings.retryTimeout,
        maximum_lag_on_failover: 1_048_576,
        synchronous_mode: true,
        // a crashed primary is failed over at once, not restarted in place (Patroni's default
        // waits up to 300 s for it to come back)
        primary_start_timeout: 0,
        postgresql: {
          use_pg_rewind: true,
          parameters: {
            max_connections: 200,
            wal_level: "replica",
            hot_standby: "on",
            max_wal_senders: 10,
            max_replication_slots: 10,
            wal_keep_size: "128MB",
          },
        },
      },
      initdb: [{ encoding: "UTF8" }, { locale: "C.UTF-8" }],
    },
    postgresql: {
      listen: `127.0.0.1:${node.pgPort}`,
      connect_address: `127.0.0.1:${node.pgPort}`,
      data_dir: `${node.dir}/data`,
      bin_dir: o.binDir,
      pgpass: `${node.dir}/pgpass`,
      authentication: {
        superuser: { username: "postgres", password: o.password },
        replication: { username: "replicator", password: o.password },
        rewind: { username: "rewinder", password: o.password },
      },
      parameters: { unix_socket_directories: node.dir },
      pg_hba: [
        "local all all trust",
        "host replication replicator 127.0.0.1/32 scram-sha-256",
        "host all all 127.0.0.1/32 scram-sha-256",
      ],
    },
    tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
  };
  return `${JSON.stringify(config, null, 2)}\n`;
}

/** haproxy in TCP mode on `port`, sending each connection to the node whose /primary is 200. */
export function haproxyConfig(o: { port: number; nodes: NodeLike[] }): string {
  return [
    "global",
    "    maxconn 1000",
    "",
    "defaults",
    "    mode tcp",
    "    retries 2",
    "    timeout connect 4s",
    "    timeout client 30m",
    "    timeout server 30m",
    "    timeout check 2s",
    "",
    "listen primary",
    `    bind 127.0.0.1:${o.port}`,
    "    option httpchk OPTIONS /primary",
    "    http-check expect status 200",
    "    default-server inter 1s fall 2 rise 2 on-marked-down shutdown-sessions",
    ...o.nodes.map(
      (n) => `    server ${n.name} 127.0.0.1:${n.pgPort} maxconn 200 check port ${n.apiPort}`,
    ),
    "",
  ].join("\n");
}
