/**
 * The TLS parameters of a PostgreSQL URL (libpq's names: sslmode, sslrootcert, sslcert,
 * sslkey, sslpassword) and the settings that override them, HOOKRELAY_DB_SSL*
 * (docs/database.md, "TLS"). Only strings here, no file and no driver: config.ts writes the
 * settings into every database URL with withTlsParams(), so that each connection hookrelay
 * makes, whatever URL it uses, resolves TLS the same way (tls.ts).
 */
import { ConfigError } from "../errors.ts";

export const SSL_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"];
export type SslMode = "disable" | "allow" | "prefer" | "require" | "verify-ca" | "verify-full";

/** The TLS settings (HOOKRELAY_DB_SSL*); each overrides the same URL parameter. */
export interface DbTlsSettings {
  /** sslmode: one of SSL_MODES */
  sslmode?: string | undefined;
  /** sslrootcert: a PEM file of the CA(s) the server's certificate must chain to, or "system" */
  sslrootcert?: string | undefined;
  /** sslcert: a PEM file with this client's certificate (with sslkey) */
  sslcert?: string | undefined;
  /** sslkey: a PEM file with the client certificate's private key */
  sslkey?: string | undefined;
  /** sslpassword: the passphrase of an encrypted sslkey */
  sslpassword?: string | undefined;
}

export type Param = keyof DbTlsSettings;
export const PARAMS: readonly Param[] = [
  "sslmode",
  "sslrootcert",
  "sslcert",
  "sslkey",
  "sslpassword",
];
/** node-postgres's own switch (`ssl=true`, `ssl=no-verify`), read as an sslmode. */
const PG_SSL_PARAM = "ssl";
/** Parameters taken out of the URL: node-postgres would apply its own meaning to them. */
export const TLS_URL_PARAMS: ReadonlySet<string> = new Set<string>([
  ...PARAMS,
  PG_SSL_PARAM,
  "sslnegotiation",
]);

/** The setting that overrides URL parameter `p`. */
export const settingName = (p: Param) => `HOOKRELAY_DB_${p.toUpperCase()}`;

/** Where a parameter's value came from, as a user would look for it. */
export interface Given {
  value: string;
  /** e.g. "HOOKRELAY_DB_SSLROOTCERT (sslrootcert=/etc/ca.pem)" */
  source: string;
}

/** A query string's parameters, decoded; a URL that cannot be parsed has none. */
export function queryOf(url: string): URLSearchParams {
  const q = url.indexOf("?");
  return new URLSearchParams(q < 0 ? "" : url.slice(q + 1).split("#")[0]);
}

/** `url` without the query parameters named in `drop`; the rest is kept as written. */
export function withoutParams(url: string, drop: ReadonlySet<string>): string {
  const q = url.indexOf("?");
  if (q < 0) return url;
  const [query = "", fragment] = url.slice(q + 1).split("#", 2);
  const kept = query.split("&").filter((pair) => {
    const key = new URLSearchParams(pair).keys().next().value;
    return pair !== "" && !(key !== undefined && drop.has(key));
  });
  const rest = `${kept.length ? `?${kept.join("&")}` : ""}${fragment === undefined ? "" : `#${fragment}`}`;
  return `${url.slice(0, q)}${rest}`;
}

/** host:port of a URL, for sentences. */
export function targetOf(url: string): string {
  try {
    const u = new URL(url);
    const host = queryOf(url).get("host") ?? decodeURIComponent(u.hostname);
    return `${host || "localhost"}:${queryOf(url).get("port") ?? (u.port || "5432")}`;
  } catch {
    return "the database";
  }
}

/** The parameters given by the URL and the settings, a setting winning over the URL. */
export function givenParams(url: string, settings: DbTlsSettings): Partial<Record<Param, Given>> {
  const query = queryOf(url);
  const given: Partial<Record<Param, Given>> = {};
  for (const p of PARAMS) {
    const fromSetting = settings[p]?.trim();
    const fromUrl = query.get(p) ?? undefined;
    const shown = (v: string) => (p === "sslpassword" ? "****" : v);
    if (fromSetting)
      given[p] = { value: fromSetting, source: `${settingName(p)} (${p}=${shown(fromSetting)})` };
    else if (fromUrl)
      given[p] = {
        value: fromUrl,
        source: `${p}=${shown(fromUrl)} (${settingName(p)} or the connection string)`,
      };
  }
  // node-postgres's ssl=true / ssl=no-verify, when no sslmode says otherwise
  const pgSsl = query.get(PG_SSL_PARAM);
  if (!given.sslmode && pgSsl !== null) {
    const mode = ["true", "1"].includes(pgSsl)
      ? "verify-full"
      : pgSsl === "no-verify"
        ? "require"
        : ["false", "0"].includes(pgSsl)
          ? "disable"
          : null;
    if (!mode)
      throw new ConfigError(
        `ssl=${pgSsl} in the connection string is not understood: use sslmode=disable, require, verify-ca or verify-full`,
      );
    given.sslmode = { value: mode, source: `ssl=${pgSsl} in the connection string` };
  }
  return given;
}

/** `url` with the settings written in as its parameters (for `hookrelay db-url`). */
export function withTlsParams(url: string, settings: DbTlsSettings): string {
  const set = PARAMS.filter((p) => settings[p]?.trim());
  if (set.length === 0) return url;
  const [base = "", fragment] = withoutParams(url, new Set(set)).split("#", 2);
  const added = set.map((p) => `${p}=${encodeURIComponent(settings[p]?.trim() ?? "")}`).join("&");
  return `${base}${base.includes("?") ? "&" : "?"}${added}${fragment === undefined ? "" : `#${fragment}`}`;
}
