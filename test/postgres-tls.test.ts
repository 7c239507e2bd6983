/**
 * TLS to a real PostgreSQL 15 (Debian's) with a throwaway CA (docs/database.md, "TLS"),
 * through hookrelay's own code paths: startRuntime with DATABASE_URL (its pool, migrations,
 * the worker's LISTEN and liveness connections), a pool, the library, and the CLI's
 * `migrate`. Each failure must be one sentence naming the setting to fix, at once (never
 * the start-up wait's retries). Without postgresql-15 or openssl the file skips loudly,
 * except in CI, where it fails.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Config, loadConfig } from "../src/config.ts";
import { makePool } from "../src/db/pool.ts";
import { ConfigError } from "../src/errors.ts";
import { HookRelay } from "../src/library.ts";
import { makeProcessLogging, type Runtime, startRuntime } from "../src/runtime.ts";
import { runCli, show } from "./helpers/cli.ts";
import { linesInto } from "./helpers/log-lines.ts";
import { startTlsPostgres, type TlsPostgres, tlsPostgresMissing } from "./helpers/tls-postgres.ts";

const missing = tlsPostgresMissing();
if (missing) {
  const say = `test/postgres-tls.test.ts: ${missing} not installed (apt-get install postgresql-15 openssl)`;
  if (process.env.CI) throw new Error(`${say}: required in CI`);
  console.warn(`\n!!! SKIPPING ${say} !!!\n`);
}

let db: TlsPostgres;
beforeAll(async () => {
  if (missing) return;
  db = await startTlsPostgres();
}, 120_000);
afterAll(async () => {
  await db?.stop();
});

/** DATABASE_URL and HOOKRELAY_DB_SSL* as a process would read them. */
function configFor(env: Record<string, string>): Config {
  return loadConfig(env, { port: 0, adminKey: "tls-test-admin-key-0123456789abcdef" });
}

/** startRuntime as `hookrelay start`, with its log lines kept. */
async function start(env: Record<string, string>) {
  const lines: string[] = [];
  const config = configFor(env);
  const logging = makeProcessLogging(config, linesInto(lines));
  try {
    return { runtime: await startRuntime(config, { api: true, worker: true }, logging), lines };
  } catch (err) {
    return { err, lines };
  }
}

/** The sentence a start-up fails with; it must not have waited for the database. */
async function refusal(env: Record<string, string>): Promise<string> {
  const { runtime, err, lines } = await start(env);
  await runtime?.stop();
  expect(err, "the start should have failed").toBeInstanceOf(ConfigError);
  expect(lines.join("\n")).not.toContain("waiting for it");
  return (err as Error).message;
}

/** Whether the pool's connection is encrypted, as the server sees it. */
async function queryOver(url: string): Promise<boolean> {
  const pool = makePool({ connectionString: url, max: 1 });
  try {
    const { rows } = await pool.query("select ssl from pg_stat_ssl where pid = pg_backend_pid()");
    return rows[0]?.ssl as boolean;
  } finally {
    await pool.end();
  }
}

describe.skipIf(missing)("TLS to PostgreSQL", () => {
  let runtime: Runtime | undefined;
  afterAll(async () => {
    await runtime?.stop();
  });

  test("sslmode=require: the API, migrations, the worker's LISTEN and liveness connections are all encrypted", async () => {
    const started = await start({ DATABASE_URL: db.url({ query: "sslmode=require" }) });
    expect(started.err).toBeUndefined();
    runtime = started.runtime;
    const res = await fetch(`${runtime?.apiUrl}/healthz`);
    expect(res.status).toBe(200);
    // every connection hookrelay holds, seen from a connection of its own pool
    const { rows } = await runtime!.pool.query(
      `select a.application_name as name, s.ssl
         from pg_stat_activity a join pg_stat_ssl s using (pid)
        where a.datname = current_database() and a.application_name like 'hookrelay%'`,
    );
    const names = rows.map((r) => r.name as string);
    expect(names).toEqual(
      expect.arrayContaining(["hookrelay", "hookrelay-listener", "hookrelay-liveness"]),
    );
    expect(rows.filter((r) => r.ssl !== true)).toEqual([]);
    await runtime?.stop();
    runtime = undefined;
  });

  test("no sslmode: not encrypted, as before", async () => {
    expect(await queryOver(db.url())).toBe(false);
  });

  test("verify-ca with the right CA works, even to a host the certificate does not name", async () => {
    const url = db.url({
      host: "127.0.0.1",
      query: `sslmode=verify-ca&sslrootcert=${db.files.ca}`,
    });
    expect(await queryOver(url)).toBe(true);
  });

  test("verify-ca with another CA: the start fails at once, naming HOOKRELAY_DB_SSLROOTCERT", async () => {
    const message = await refusal({
      DATABASE_URL: db.url({ query: "sslmode=verify-ca" }),
      HOOKRELAY_DB_SSLROOTCERT: db.files.wrongCa,
    });
    expect(message).toBe(
      `the certificate of the database at localhost:${db.port} is not signed by the CA in ` +
        `sslrootcert=${db.files.wrongCa} (HOOKRELAY_DB_SSLROOTCERT or the connection string) ` +
        "(self-signed certificate in certificate chain): point it at the CA file your provider publishes for this database",
    );
  });

  test("verify-full without sslrootcert does not trust a private CA", async () => {
    const message = await refusal({ DATABASE_URL: db.url({ query: "sslmode=verify-full" }) });
    expect(message).toMatch(
      /is not signed by any CA Node.js trusts .*: set HOOKRELAY_DB_SSLROOTCERT \(or sslrootcert in the connection string\)/,
    );
  });

  test("verify-full to localhost works; to 127.0.0.1, which the certificate does not name, it fails naming the host", async () => {
    const settings = { HOOKRELAY_DB_SSLMODE: "verify-full", HOOKRELAY_DB_SSLROOTCERT: db.files.ca };
    expect(await queryOver(configFor({ DATABASE_URL: db.url(), ...settings }).databaseUrl!)).toBe(
      true,
    );
    const message = await refusal({ DATABASE_URL: db.url({ host: "127.0.0.1" }), ...settings });
    expect(message).toBe(
      `the certificate of the database at 127.0.0.1:${db.port} does not name the host "127.0.0.1" ` +
        "(it names DNS:localhost), and sslmode=verify-full (from sslmode=verify-full " +
        "(HOOKRELAY_DB_SSLMODE or the connection string)) checks the host name: connect with a " +
        "host name the certificate names, or use sslmode=verify-ca to check the CA only",
    );
  });

  test("a role that logs in by client certificate connects with sslcert and sslkey", async () => {
    const url = configFor({
      DATABASE_URL: db.url({ role: "certuser", query: "sslmode=verify-full" }),
      HOOKRELAY_DB_SSLROOTCERT: db.files.ca,
      HOOKRELAY_DB_SSLCERT: db.files.clientCert,
      HOOKRELAY_DB_SSLKEY: db.files.clientKey,
    }).databaseUrl!;
    expect(await queryOver(url)).toBe(true);
  });

  test("an encrypted client key with its passphrase (HOOKRELAY_DB_SSLPASSWORD)", async () => {
    const url = configFor({
      DATABASE_URL: db.url({ role: "certuser", query: "sslmode=require" }),
      HOOKRELAY_DB_SSLCERT: db.files.clientCert,
      HOOKRELAY_DB_SSLKEY: db.files.clientKeyEncrypted,
      HOOKRELAY_DB_SSLPASSWORD: db.files.clientKeyPassphrase,
    }).databaseUrl!;
    expect(await queryOver(url)).toBe(true);
  });

  test("the client-certificate role without a certificate, or with one from another CA, is refused with a sentence", async () => {
    const without = await refusal({
      DATABASE_URL: db.url({ role: "certuser", query: "sslmode=require" }),
    });
    expect(without).toBe(
      `the database at localhost:${db.port} accepts this role with a client certificate only ` +
        "(connection requires a valid client certificate): set HOOKRELAY_DB_SSLCERT and " +
        "HOOKRELAY_DB_SSLKEY (or sslcert and sslkey in the connection string)",
    );
    const stranger = await refusal({
      DATABASE_URL: db.url({ role: "certuser", query: "sslmode=require" }),
      HOOKRELAY_DB_SSLCERT: db.files.strangerCert,
      HOOKRELAY_DB_SSLKEY: db.files.strangerKey,
    });
    expect(stranger).toBe(
      `the database at localhost:${db.port} refused the client certificate in ` +
        `sslcert=${db.files.strangerCert} (HOOKRELAY_DB_SSLCERT or the connection string) during ` +
        "the TLS handshake (tlsv1 alert unknown ca): use a certificate signed by the CA the " +
        "server trusts (its ssl_ca_file)",
    );
  });

  test("a client key file that cannot be read stops the start before any connection", async () => {
    const message = await refusal({
      DATABASE_URL: db.url({ role: "certuser", query: "sslmode=require" }),
      HOOKRELAY_DB_SSLCERT: db.files.clientCert,
      HOOKRELAY_DB_SSLKEY: "/nonexistent/client.key",
    });
    expect(message).toBe(
      "cannot read the client key named by sslkey=/nonexistent/client.key " +
        "(HOOKRELAY_DB_SSLKEY or the connection string): ENOENT",
    );
  });

  test("a server that refuses unencrypted connections: the sentence says to set sslmode", async () => {
    const message = await refusal({ DATABASE_URL: db.url({ role: "tlsonly" }) });
    expect(message).toMatch(
      /refuses unencrypted connections .*: set HOOKRELAY_DB_SSLMODE \(or sslmode in the connection string\) to require, verify-ca or verify-full$/,
    );
    expect(await queryOver(db.url({ role: "tlsonly", query: "sslmode=require" }))).toBe(true);
  });

  test("the library: a connection string with verify-full and sslrootcert", async () => {
    const url = db.url({ query: `sslmode=verify-full&sslrootcert=${db.files.ca}` });
    const relay = new HookRelay({ connectionString: url });
    try {
      // the migrated schema is there (the first test); an unknown app is a clean not_found
      await expect(
        relay.send("app_unknown", { eventType: "tls.check", payload: {} }),
      ).rejects.toMatchObject({ code: "not_found" });
    } finally {
      await relay.close();
    }
    const wrong = new HookRelay({
      connectionString: db.url({ query: `sslmode=verify-full&sslrootcert=${db.files.wrongCa}` }),
    });
    try {
      await expect(
        wrong.send("app_unknown", { eventType: "tls.check", payload: {} }),
      ).rejects.toThrow(/is not signed by the CA in sslrootcert=/);
    } finally {
      await wrong.close();
    }
  });

  test("the CLI's migrate: works with the right CA, and says which setting is wrong otherwise", async () => {
    const env = { DATABASE_URL: db.url({ query: "sslmode=verify-full" }) };
    const ok = await runCli(["migrate"], {
      env: { ...env, HOOKRELAY_DB_SSLROOTCERT: db.files.ca },
    });
    expect(ok.code, show(ok)).toBe(0);
    const bad = await runCli(["migrate"], {
      env: { ...env, HOOKRELAY_DB_SSLROOTCERT: db.files.wrongCa },
    });
    expect(bad.code, show(bad)).not.toBe(0);
    expect(bad.stderr).toContain(
      `hookrelay: invalid_config: the certificate of the database at localhost:${db.port} is not signed by the CA in sslrootcert=${db.files.wrongCa} (HOOKRELAY_DB_SSLROOTCERT or the connection string)`,
    );
    expect(bad.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  test("an expired server certificate", async () => {
    await db.serveExpiredCert();
    const message = await refusal({
      DATABASE_URL: db.url({ query: `sslmode=verify-full&sslrootcert=${db.files.ca}` }),
    });
    expect(message).toMatch(
      new RegExp(
        `^the certificate of the database at localhost:${db.port} has expired \\(checked because of sslmode=verify-full`,
      ),
    );
  });

  test("a server without TLS, with sslmode=require (last: TLS stays off)", async () => {
    await db.turnTlsOff();
    const message = await refusal({
      DATABASE_URL: db.url(),
      HOOKRELAY_DB_SSLMODE: "require",
    });
    expect(message).toBe(
      `the database at localhost:${db.port} does not accept TLS, but sslmode=require (from ` +
        "sslmode=require (HOOKRELAY_DB_SSLMODE or the connection string)) asks for it: turn TLS " +
        "on at the server, or set HOOKRELAY_DB_SSLMODE (or sslmode in the connection string) to disable",
    );
  });
});
