/**
 * The zero-config database: a PostgreSQL cluster kept in `<dataDir>/pg`, initialised on
 * first use and reused afterwards, run by hookrelay itself (postgres-cluster.ts). As root
 * it runs as the postgres system user, and where that user cannot reach the data folder the
 * cluster lives in a shared place instead (postgres-as-root.ts). See docs/embedded.md.
 *
 * Connection details live in `<dataDir>/embedded.json`. If a previous process died without
 * stopping its cluster (kill -9), the still-running server is found through its
 * `postmaster.pid` and taken over (this process stops it on exit), unless the hookrelay that
 * started it still runs (`embedded.owner`): then it is shared. A postmaster that died too
 * leaves a stale `postmaster.pid`, which is removed before the cluster starts again.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chown, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { ConfigError, DatabaseError } from "../errors.ts";
import { freePort } from "../lib/free-port.ts";
import type { Logger } from "../logger.ts";
import {
  clusterDirFor,
  EMBEDDED_DATABASE,
  EMBEDDED_USER,
  type EmbeddedState,
  embeddedUrl,
  isAlive,
  postmasterStatus,
  readEmbeddedState,
  stateFileOf,
} from "./embedded-state.ts";
import {
  binariesFor,
  ensurePostgresUser,
  firstBlockedFolder,
  sharedClusterDir,
} from "./postgres-as-root.ts";
import {
  initCluster,
  locateBinaries,
  type RunAs,
  startCluster,
  stopPostmaster,
} from "./postgres-cluster.ts";
import { withClient } from "./short-client.ts";

export interface EmbeddedDatabase {
  connectionString: string;
  /** where the cluster's files are */
  clusterDir: string;
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

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const database = options.database ?? EMBEDDED_DATABASE;
  const { dataDir, logger } = options;
  const stateFile = stateFileOf(dataDir);
  const isRoot = process.getuid?.() === 0;
  // A folder hookrelay creates may be entered by the postgres user (as root); a folder the
  // user made keeps the permissions it has.
  await mkdir(dataDir, { recursive: true, mode: isRoot ? 0o755 : 0o700 });

  const saved = await readEmbeddedState(dataDir);
  let clusterDir = clusterDirFor(dataDir, saved);
  let binaries = locateBinaries();
  let runAs: RunAs = null;
  if (isRoot) {
    const user = await ensurePostgresUser();
    if (user.created) {
      logger?.warn("PostgreSQL refuses to run as root: created the system user postgres to run it");
    }
    runAs = { uid: user.uid, gid: user.gid };
    const reachable = await binariesFor(binaries, user);
    binaries = reachable.binaries;
    if (reachable.note) logger?.info(reachable.note);
    const blocked = saved ? null : await firstBlockedFolder(dataDir, user);
    if (blocked) {
      clusterDir = await sharedClusterDir(dataDir);
      logger?.info(
        `the postgres user cannot enter ${blocked}: the database of ${dataDir} is kept in ${clusterDir} (recorded in ${stateFile}); folder permissions are left as they are`,
      );
    }
  }

  const initialised = existsSync(path.join(clusterDir, "PG_VERSION"));
  if (initialised && !saved) {
    throw new ConfigError(
      `${stateFile} is missing: it holds the password of the cluster in ${clusterDir}; restore it, or move ${dataDir} away to start with a new, empty database`,
    );
  }
  const state: EmbeddedState = saved ?? {
    password: randomBytes(18).toString("base64url"),
    ...(clusterDir !== clusterDirFor(dataDir, null) && { clusterDir }),
  };

  const status = initialised ? await postmasterStatus(clusterDir) : null;
  if (status?.state === "stale") {
    // PostgreSQL replaces a stale lock file itself unless its pid is taken (a zombie, or a
    // reused pid): remove it, since we know that process is not a postmaster any more.
    await rm(path.join(clusterDir, "postmaster.pid"), { force: true });
    logger?.info({ pid: status.pid }, "removed the postmaster.pid of a PostgreSQL that was killed");
  }
  const running = status?.state === "running" ? status : null;
  const port = running?.port ?? (options.port || (await freePort()));
  const url = (db: string) => embeddedUrl(state, port, db);
  const ownerFile = path.join(dataDir, "embedded.owner");

  let stop: () => Promise<void> = async () => undefined;
  let owned = false;
  try {
    if (!initialised) {
      // the folders on the way must stay enterable by the postgres user; only the cluster is 0700
      await mkdir(path.dirname(clusterDir), { recursive: true, mode: 0o755 });
      await mkdir(clusterDir, { mode: 0o700 });
      if (runAs) await chown(clusterDir, runAs.uid, runAs.gid);
      await initCluster({
        binaries,
        clusterDir,
        user: EMBEDDED_USER,
        password: state.password,
        runAs,
      });
      await writeFile(stateFile, JSON.stringify(state), { mode: 0o600 });
    }
    if (!running) {
      const cluster = await startCluster({
        binaries,
        clusterDir,
        port,
        flags: options.postgresFlags ?? [],
        runAs,
        logFile: path.join(dataDir, "postgres.log"),
      });
      stop = () => cluster.stop();
      owned = true;
    } else {
      const owner = Number(await readFile(ownerFile, "utf8").catch(() => ""));
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && (await isAlive(owner))) {
        // another hookrelay process (a running `npm start`) uses it: share, never stop it
        logger?.debug(
          { owner, port },
          "using the embedded PostgreSQL of another hookrelay process",
        );
      } else {
        // left running by a hookrelay that was killed: this process takes it over
        logger?.info(
          { pid: running.pid, port },
          "took over the embedded PostgreSQL left running by a killed process",
        );
        stop = () => stopPostmaster(running.pid);
        owned = true;
      }
    }
    if (owned) await writeFile(ownerFile, `${process.pid}\n`);
    await ensureDatabase(url("postgres"), database);
  } catch (err) {
    await stop().catch(() => undefined);
    if (err instanceof ConfigError) throw err;
    throw new DatabaseError(
      `embedded PostgreSQL in ${clusterDir} failed to start: ${(err as Error).message}`,
      { cause: err },
    );
  }

  let stopping: Promise<void> | null = null;
  return {
    connectionString: url(database),
    clusterDir,
    stop() {
      stopping ??= (async () => {
        await stop();
        if (owned) await rm(ownerFile, { force: true });
      })();
      return stopping;
    },
  };
}

async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  await withClient({ connectionString: adminUrl }, async (client) => {
    const found = await client.query("select 1 from pg_database where datname = $1::text", [
      database,
    ]);
    if (found.rowCount === 0) {
      await client.query(`create database ${client.escapeIdentifier(database)}`).catch((err) => {
        // Another process created it at the same moment.
        if ((err as { code?: string }).code !== "42P04") throw err;
      });
    }
  });
}
