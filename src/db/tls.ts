/**
 * TLS to PostgreSQL with libpq's meaning of its parameters (docs/database.md, "TLS"),
 * resolved once per pool or connection instead of by node-postgres, whose connection-string
 * parser gives `sslmode` other meanings (require checks the host name) and reads the files
 * again, synchronously, for every new connection.
 *
 * The parameters come from the connection string (`?sslmode=verify-full&sslrootcert=...`,
 * as providers' consoles print them) or from settings (HOOKRELAY_DB_SSL*), a setting
 * overriding the same parameter of the URL. What each mode checks:
 *
 *   disable, allow   no TLS (allow: hookrelay never retries with TLS, see the docs)
 *   prefer, require  encrypted; no check, unless sslrootcert is given: then the CA is
 *                    checked as in verify-ca (libpq does the same). Never falls back to an
 *                    unencrypted connection.
 *   verify-ca        encrypted; the server's chain must end at a CA in sslrootcert
 *   verify-full      as verify-ca, and the certificate must name the host connected to;
 *                    without sslrootcert, Node's list of public CAs is used
 *
 * Nothing given at all: no TLS, as before. sslrootcert=system is Node's public CAs (libpq
 * 16), allowed with verify-full only.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import tls from "node:tls";
import type pg from "pg";
import { ConfigError } from "../errors.ts";
import { explainTlsFailure } from "./tls-failures.ts";
import {
  type DbTlsSettings,
  type Given,
  givenParams,
  type Param,
  SSL_MODES,
  settingName,
  TLS_URL_PARAMS,
  targetOf,
  withoutParams,
} from "./tls-params.ts";

export interface ResolvedTls {
  /** the connection string without the TLS parameters, for node-postgres */
  connectionString: string;
  /** node-postgres's `ssl` option: false for no TLS */
  ssl: tls.ConnectionOptions | false;
  /** the effective mode, with prefer and allow already read as require and disable */
  mode: "disable" | "require" | "verify-ca" | "verify-full";
  /** the parameters as given, for error sentences */
  given: Partial<Record<Param, Given>>;
  /** host:port of the URL, for error sentences */
  target: string;
}

function readPem(given: Given, what: string): Buffer {
  try {
    return readFileSync(given.value);
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new ConfigError(`cannot read ${what} named by ${given.source}: ${reason}`, {
      cause: err,
    });
  }
}

/** Reads and checks the files up front, so that a bad one is a start-up sentence. */
function loadFiles(given: ResolvedTls["given"], mode: ResolvedTls["mode"]): tls.ConnectionOptions {
  const options: tls.ConnectionOptions = {};
  const { sslrootcert, sslcert, sslkey, sslpassword } = given;
  if (sslrootcert && sslrootcert.value !== "system" && mode !== "require") {
    const ca = readPem(sslrootcert, "the CA file");
    try {
      tls.createSecureContext({ ca });
      if (!ca.includes("-----BEGIN CERTIFICATE-----")) throw new Error("no PEM certificate in it");
    } catch (err) {
      throw new ConfigError(
        `the CA file named by ${sslrootcert.source} holds no usable PEM certificate: ${(err as Error).message}`,
        { cause: err },
      );
    }
    options.ca = ca;
  }
  if (sslcert || sslkey) {
    if (!sslcert || !sslkey)
      throw new ConfigError(
        `a client certificate needs both sslcert and sslkey, but only ${(sslcert ?? sslkey)?.source} is given: set ${settingName(sslcert ? "sslkey" : "sslcert")} too`,
      );
    const cert = readPem(sslcert, "the client certificate");
    const key = readPem(sslkey, "the client key");
    try {
      new X509Certificate(cert);
    } catch (err) {
      throw new ConfigError(
        `the client certificate named by ${sslcert.source} is not a PEM certificate: ${(err as Error).message}`,
        { cause: err },
      );
    }
    const passphrase = sslpassword?.value;
    try {
      createPrivateKey({ key, ...(passphrase !== undefined && { passphrase }) });
    } catch (err) {
      const hint =
        passphrase === undefined
          ? " (an encrypted key needs HOOKRELAY_DB_SSLPASSWORD)"
          : sslpassword
            ? ` (is the passphrase in ${sslpassword.source} right?)`
            : "";
      throw new ConfigError(
        `the client key named by ${sslkey.source} cannot be read as a private key${hint}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    try {
      tls.createSecureContext({ cert, key, ...(passphrase !== undefined && { passphrase }) });
    } catch (err) {
      throw new ConfigError(
        `the client certificate (${sslcert.source}) and key (${sslkey.source}) do not belong together: ${(err as Error).message}`,
        { cause: err },
      );
    }
    Object.assign(options, { cert, key }, passphrase !== undefined && { passphrase });
  }
  return options;
}

/** The effective mode; refuses combinations libpq refuses. */
function effectiveMode(given: ResolvedTls["given"]): ResolvedTls["mode"] {
  const { sslmode, sslrootcert, sslcert, sslkey } = given;
  const system = sslrootcert?.value === "system";
  let mode: string;
  if (sslmode) mode = sslmode.value;
  // libpq 16: sslrootcert=system alone means verify-full
  else if (system) mode = "verify-full";
  // libpq's default is prefer; hookrelay has always connected without TLS when told nothing
  else mode = sslrootcert || sslcert || sslkey ? "prefer" : "disable";
  if (!SSL_MODES.includes(mode))
    throw new ConfigError(`${sslmode?.source}: sslmode must be one of ${SSL_MODES.join(", ")}`);
  if (mode === "disable" || mode === "allow") return "disable";
  if (system && mode !== "verify-full")
    throw new ConfigError(
      `${sslrootcert?.source} trusts every public CA, which is safe with sslmode=verify-full only, but ${sslmode?.source} asks for ${mode}: use verify-full`,
    );
  if (mode === "verify-ca" && !sslrootcert)
    throw new ConfigError(
      `${sslmode?.source} checks the server's certificate against a CA file, but none is given: set ${settingName("sslrootcert")} (or sslrootcert in the connection string) to your provider's CA file, or use verify-full to trust the public CAs`,
    );
  if (mode === "prefer" || mode === "require") return sslrootcert ? "verify-ca" : "require";
  return mode as "verify-ca" | "verify-full";
}

/**
 * Resolves the TLS parameters of `url` and `settings` once: the files are read and checked
 * now (a ConfigError naming the setting when one is missing or unusable).
 */
export function resolveTls(url: string, settings: DbTlsSettings = {}): ResolvedTls {
  const given = givenParams(url, settings);
  const mode = effectiveMode(given);
  const connectionString = withoutParams(url, TLS_URL_PARAMS);
  const target = targetOf(url);
  if (mode === "disable") return { connectionString, ssl: false, mode, given, target };
  const ssl: tls.ConnectionOptions = {
    ...loadFiles(given, mode),
    // require: encrypted, but anyone may answer (libpq's meaning)
    rejectUnauthorized: mode !== "require",
    // verify-ca: the chain is checked, the host name is not
    ...(mode === "verify-ca" && { checkServerIdentity: () => undefined }),
  };
  return { connectionString, ssl, mode, given, target };
}

/** What node-postgres needs to connect to one URL with TLS resolved by hookrelay. */
export interface PgConnection {
  /** the URL without its TLS parameters (node-postgres would read them its own way) */
  connectionString: string;
  /** node-postgres's `ssl` option: false for no TLS */
  ssl: tls.ConnectionOptions | false;
  /**
   * `Base` (pg.Client or a subclass, e.g. a pool's own) extended so that connect() turns a
   * TLS failure into a ConfigError naming the setting to fix (tls-failures.ts).
   */
  explaining<C extends ClientClass>(Base: C): C;
}

// biome-ignore lint/suspicious/noExplicitAny: any constructor of a pg client; pg.Pool's `Client` option is typed `new () => ClientBase`
type ClientClass = new (...args: any[]) => pg.ClientBase;
type ConnectCallback = (err: Error | null) => void;

/**
 * Resolves the TLS of `url` once (its files read and checked now: a ConfigError naming the
 * setting when one is unusable) for a pool or a connection that reconnects.
 */
export function pgConnection(url: string, settings?: DbTlsSettings): PgConnection {
  const resolved = resolveTls(url, settings);
  const explain = (err: unknown) => explainTlsFailure(err, resolved);
  return {
    connectionString: resolved.connectionString,
    ssl: resolved.ssl,
    explaining<C extends ClientClass>(Base: C): C {
      const Plain = Base as unknown as typeof pg.Client;
      return class extends Plain {
        // biome-ignore lint/suspicious/noExplicitAny: pg's two overloads (promise, callback) in one body
        override connect(callback?: any): any {
          if (typeof callback === "function")
            return super.connect(((err: Error | null) =>
              callback(err ? explain(err) : err)) as ConnectCallback);
          return super.connect().catch((err: unknown) => {
            throw explain(err);
          });
        }
      } as unknown as C;
    },
  };
}
