import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { makeCertificates, type TlsFiles } from "../../test/helpers/tls-certificates.ts";
import { loadClientConfig, loadConfig } from "../config.ts";
import { ConfigError } from "../errors.ts";
import { resolveTls } from "./tls.ts";
import { explainTlsFailure } from "./tls-failures.ts";
import { withTlsParams } from "./tls-params.ts";
import { isDatabaseUnavailable } from "./unavailable.ts";

const URL = "postgres://u:p%40ss@db.example.com:6543/app";

let dir: string;
let files: TlsFiles;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-tls-unit-"));
  files = await makeCertificates(dir);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("no ConfigError");
};

describe("resolveTls: libpq's sslmode", () => {
  test("nothing given: no TLS, the URL untouched", () => {
    const r = resolveTls(`${URL}?application_name=x`);
    expect(r).toMatchObject({ ssl: false, mode: "disable", target: "db.example.com:6543" });
    expect(r.connectionString).toBe(`${URL}?application_name=x`);
  });

  test("disable and allow: no TLS", () => {
    expect(resolveTls(`${URL}?sslmode=disable`).ssl).toBe(false);
    expect(resolveTls(`${URL}?sslmode=allow`).ssl).toBe(false);
  });

  test("require: encrypted, nothing checked; the TLS parameters leave the URL, the rest stays", () => {
    const r = resolveTls(`${URL}?application_name=x&sslmode=require&options=-c%20a%3Db`);
    expect(r.mode).toBe("require");
    expect(r.ssl).toEqual({ rejectUnauthorized: false });
    expect(r.connectionString).toBe(`${URL}?application_name=x&options=-c%20a%3Db`);
  });

  test("prefer is require: hookrelay never falls back to an unencrypted connection", () => {
    expect(resolveTls(`${URL}?sslmode=prefer`).ssl).toEqual({ rejectUnauthorized: false });
  });

  test("require with sslrootcert checks the CA, not the host (as libpq does)", () => {
    const r = resolveTls(`${URL}?sslmode=require&sslrootcert=${files.ca}`);
    expect(r.mode).toBe("verify-ca");
    const ssl = r.ssl as Exclude<typeof r.ssl, false>;
    expect(ssl.rejectUnauthorized).toBe(true);
    expect(String(ssl.ca)).toContain("BEGIN CERTIFICATE");
    expect(ssl.checkServerIdentity?.("elsewhere", {} as never)).toBeUndefined();
  });

  test("verify-full checks the host with Node's own check; without sslrootcert Node's public CAs", () => {
    const r = resolveTls(`${URL}?sslmode=verify-full`);
    expect(r.ssl).toEqual({ rejectUnauthorized: true });
    const withCa = resolveTls(`${URL}?sslmode=verify-full&sslrootcert=${files.ca}`);
    expect((withCa.ssl as { checkServerIdentity?: unknown }).checkServerIdentity).toBeUndefined();
  });

  test("verify-ca without a CA file is refused, naming the setting", () => {
    expect(refusal(() => resolveTls(`${URL}?sslmode=verify-ca`))).toMatch(
      /sslmode=verify-ca .*none is given: set HOOKRELAY_DB_SSLROOTCERT/,
    );
  });

  test("sslrootcert=system: verify-full by default, refused with a weaker mode", () => {
    expect(resolveTls(`${URL}?sslrootcert=system`).mode).toBe("verify-full");
    expect(refusal(() => resolveTls(`${URL}?sslrootcert=system&sslmode=require`))).toMatch(
      /verify-full only/,
    );
  });

  test("node-postgres's ssl=true and ssl=no-verify are read as verify-full and require", () => {
    expect(resolveTls(`${URL}?ssl=true`).mode).toBe("verify-full");
    expect(resolveTls(`${URL}?ssl=no-verify`).mode).toBe("require");
    expect(resolveTls(`${URL}?ssl=true`).connectionString).toBe(URL);
  });

  test("a setting overrides the URL's parameter and is named", () => {
    const r = resolveTls(`${URL}?sslmode=disable`, { sslmode: "verify-full" });
    expect(r.mode).toBe("verify-full");
    expect(r.given.sslmode?.source).toBe("HOOKRELAY_DB_SSLMODE (sslmode=verify-full)");
    expect(refusal(() => resolveTls(URL, { sslmode: "on" }))).toMatch(
      /HOOKRELAY_DB_SSLMODE \(sslmode=on\): sslmode must be one of disable, allow/,
    );
  });
});

describe("resolveTls: files are read once, up front", () => {
  test("a CA file that cannot be read names the setting and the path", () => {
    expect(
      refusal(() => resolveTls(URL, { sslmode: "verify-ca", sslrootcert: "/nonexistent/ca.pem" })),
    ).toBe(
      "cannot read the CA file named by HOOKRELAY_DB_SSLROOTCERT (sslrootcert=/nonexistent/ca.pem): ENOENT",
    );
  });

  test("a CA file without a certificate in it", async () => {
    const junk = path.join(dir, "junk.pem");
    await writeFile(junk, "not a certificate\n");
    expect(refusal(() => resolveTls(`${URL}?sslmode=verify-full&sslrootcert=${junk}`))).toMatch(
      /the CA file named by sslrootcert=.*junk.pem \(HOOKRELAY_DB_SSLROOTCERT or the connection string\) holds no usable PEM certificate/,
    );
  });

  test("a client certificate needs its key", () => {
    expect(
      refusal(() => resolveTls(URL, { sslmode: "require", sslcert: files.clientCert })),
    ).toMatch(/needs both sslcert and sslkey.*set HOOKRELAY_DB_SSLKEY too/);
  });

  test("client certificate and key are loaded; an encrypted key needs its passphrase", () => {
    const plain = resolveTls(URL, {
      sslmode: "require",
      sslcert: files.clientCert,
      sslkey: files.clientKey,
    });
    expect(String((plain.ssl as { cert?: unknown }).cert)).toContain("BEGIN CERTIFICATE");
    const encrypted = { sslmode: "require", sslcert: files.clientCert };
    expect(
      refusal(() => resolveTls(URL, { ...encrypted, sslkey: files.clientKeyEncrypted })),
    ).toMatch(
      /cannot be read as a private key \(an encrypted key needs HOOKRELAY_DB_SSLPASSWORD\)/,
    );
    expect(
      refusal(() =>
        resolveTls(URL, { ...encrypted, sslkey: files.clientKeyEncrypted, sslpassword: "wrong" }),
      ),
    ).toMatch(/is the passphrase in HOOKRELAY_DB_SSLPASSWORD \(sslpassword=\*\*\*\*\) right/);
    const ok = resolveTls(URL, {
      ...encrypted,
      sslkey: files.clientKeyEncrypted,
      sslpassword: files.clientKeyPassphrase,
    });
    expect((ok.ssl as { passphrase?: string }).passphrase).toBe(files.clientKeyPassphrase);
  });

  test("a certificate and a key that do not belong together", () => {
    expect(
      refusal(() =>
        resolveTls(URL, {
          sslmode: "require",
          sslcert: files.clientCert,
          sslkey: files.strangerKey,
        }),
      ),
    ).toMatch(/do not belong together/);
  });
});

describe("withTlsParams", () => {
  test("writes the settings in, replacing the URL's own, keeping the rest", () => {
    expect(
      withTlsParams(`${URL}?sslmode=disable&application_name=x`, {
        sslmode: "verify-full",
        sslrootcert: "/etc/ssl/my ca.pem",
      }),
    ).toBe(`${URL}?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fssl%2Fmy%20ca.pem`);
    expect(withTlsParams(URL, {})).toBe(URL);
    const r = resolveTls(withTlsParams(URL, { sslmode: "verify-full", sslrootcert: files.ca }));
    expect(r.mode).toBe("verify-full");
  });
});

describe("config: HOOKRELAY_DB_SSL* reach every database URL", () => {
  const env = {
    DATABASE_URL: `${URL}?sslmode=disable`,
    HOOKRELAY_DATABASE_DIRECT_URL: URL,
    HOOKRELAY_MIGRATION_DATABASE_URL: URL,
    HOOKRELAY_DB_SSLMODE: "verify-full",
    HOOKRELAY_DB_SSLROOTCERT: "/etc/ca.pem",
  };
  const tlsOf = (url: string | undefined) => {
    const r = resolveTls(url ?? "", {});
    return { mode: r.mode, ca: r.given.sslrootcert?.value };
  };

  test("each URL, a URL given by a flag (an override) too, and the CLI's db-url", () => {
    const want = { mode: "verify-full", ca: "/etc/ca.pem" };
    // resolving reads the CA file, so only the parameters are compared here
    const params = (url: string | undefined) =>
      Object.fromEntries(new URLSearchParams(url?.split("?")[1] ?? ""));
    const config = loadConfig(env);
    for (const url of [config.databaseUrl, config.databaseDirectUrl, config.migrationDatabaseUrl])
      expect(params(url)).toEqual({ sslmode: want.mode, sslrootcert: want.ca });
    const flagged = loadConfig(env, { databaseUrl: `${URL}?application_name=m` });
    expect(params(flagged.databaseUrl)).toEqual({
      application_name: "m",
      sslmode: want.mode,
      sslrootcert: want.ca,
    });
    expect(params(loadClientConfig(env).databaseUrl)).toEqual({
      sslmode: want.mode,
      sslrootcert: want.ca,
    });
    expect(loadConfig({ DATABASE_URL: URL }).databaseUrl).toBe(URL);
    expect(tlsOf(loadConfig({ DATABASE_URL: `${URL}?sslmode=require` }).databaseUrl).mode).toBe(
      "require",
    );
  });
});

describe("explainTlsFailure", () => {
  const withCode = (code: string, message: string, extra = {}) =>
    Object.assign(new Error(message), { code }, extra);
  const verifyCa = () => resolveTls(`${URL}?sslmode=verify-ca&sslrootcert=${files.ca}`);

  test.each([
    [
      "a server certificate from another CA",
      withCode("SELF_SIGNED_CERT_IN_CHAIN", "self-signed certificate in certificate chain"),
      /^the certificate of the database at db.example.com:6543 is not signed by the CA in sslrootcert=.*ca.crt \(HOOKRELAY_DB_SSLROOTCERT or the connection string\)/,
    ],
    [
      "an expired server certificate",
      withCode("CERT_HAS_EXPIRED", "certificate has expired"),
      /certificate of the database at db.example.com:6543 has expired \(checked because of sslmode=verify-ca/,
    ],
    [
      "a host name the certificate does not name",
      withCode("ERR_TLS_CERT_ALTNAME_INVALID", "Hostname/IP does not match", {
        host: "127.0.0.1",
        cert: { subjectaltname: "DNS:localhost" },
      }),
      /does not name the host "127.0.0.1" \(it names DNS:localhost\), and sslmode=verify-ca .*checks the host name/,
    ],
    [
      "a server without TLS",
      new Error("The server does not support SSL connections"),
      /does not accept TLS, but sslmode=verify-ca .* asks for it: turn TLS on at the server, or set HOOKRELAY_DB_SSLMODE/,
    ],
    [
      "a role that needs a client certificate",
      withCode("28000", "connection requires a valid client certificate"),
      /accepts this role with a client certificate only .*: set HOOKRELAY_DB_SSLCERT and HOOKRELAY_DB_SSLKEY/,
    ],
  ])("%s: a ConfigError naming the setting, never 'unavailable'", (_what, err, sentence) => {
    const explained = explainTlsFailure(err, verifyCa());
    expect(explained).toBeInstanceOf(ConfigError);
    expect((explained as Error).message).toMatch(sentence);
    expect((explained as Error).cause).toBe(err);
    expect(isDatabaseUnavailable(explained)).toBe(false);
  });

  test("an unencrypted connection the server refuses: use sslmode=require", () => {
    const err = withCode("28000", 'pg_hba.conf rejects connection for host "x", no encryption');
    expect((explainTlsFailure(err, resolveTls(URL)) as Error).message).toMatch(
      /refuses unencrypted connections .*: set HOOKRELAY_DB_SSLMODE \(or sslmode in the connection string\) to require/,
    );
  });

  test("anything else is left as it is (a refused connection stays unavailable)", () => {
    const refused = withCode("ECONNREFUSED", "connect ECONNREFUSED");
    expect(explainTlsFailure(refused, verifyCa())).toBe(refused);
    const password = withCode("28P01", "password authentication failed");
    expect(explainTlsFailure(password, verifyCa())).toBe(password);
  });
});
