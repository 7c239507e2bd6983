/**
 * The egress flags of `endpoint add` and `endpoint update` (docs/egress.md): the pool, the
 * endpoint's own proxy, and mTLS (the client certificate, its key and a CA bundle, each read
 * from a PEM file). On `update`, "default" removes one (the certificate and its key go
 * together: "default" for either removes both).
 */
import { readFileSync } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { orDefault, RESET } from "./args.ts";

/** A PEM file's text. */
const pemFile = (path: string): string => {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new InvalidArgumentError(`cannot read ${path}: ${(err as Error).message}`);
  }
};
const text = (v: string) => v;

/** flag, its option key, API field, parser, help */
const EGRESS: ReadonlyArray<readonly [string, string, string, (v: string) => string, string]> = [
  [
    "--egress-pool <name>",
    "egressPool",
    "egressPool",
    text,
    "the egress pool its requests leave through (GET /api/v1/egress lists them)",
  ],
  [
    "--proxy-url <url>",
    "proxyUrl",
    "proxyUrl",
    text,
    "its own forward proxy: http://, https:// or socks5:// [user:password@]host:port (the password is stored sealed)",
  ],
  [
    "--tls-client-cert <file>",
    "tlsClientCert",
    "tlsClientCert",
    pemFile,
    "mTLS: a PEM file with the client certificate (with --tls-client-key; stored sealed)",
  ],
  [
    "--tls-client-key <file>",
    "tlsClientKey",
    "tlsClientKey",
    pemFile,
    "mTLS: a PEM file with the certificate's unencrypted private key (stored sealed)",
  ],
  [
    "--tls-ca <file>",
    "tlsCa",
    "tlsCa",
    pemFile,
    "a PEM file of the CA certificates the receiver's certificate must chain to",
  ],
];

export function withEgressFields(c: Command, update: boolean): Command {
  for (const [flag, , , parse, help] of EGRESS)
    c.option(
      flag,
      update ? `${help} ("default" removes it)` : help,
      update ? orDefault(parse) : parse,
    );
  return c;
}

/** The egress fields of a request body, from the parsed options. */
export function egressBody(o: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [, key, field] of EGRESS) {
    const v = o[key];
    if (v !== undefined) body[field] = v === RESET ? null : v;
  }
  // the pair goes together: removing one removes both
  if (body.tlsClientCert === null || body.tlsClientKey === null) {
    body.tlsClientCert = null;
    body.tlsClientKey = null;
  }
  return body;
}
