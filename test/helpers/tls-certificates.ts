/**
 * A throwaway PKI made with `openssl` for the TLS tests: a CA, a second CA that signed
 * nothing the server shows, a server certificate for `localhost` only (so 127.0.0.1 is a
 * host name it does not name) and an expired one, client certificates for the role
 * `certuser` (one from each CA), and the client key also encrypted with a passphrase.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const exec = promisify(execFile);

/** The files a client may be given (PEM). */
export interface TlsFiles {
  /** the server's certificate (localhost) and key, and an expired pair */
  serverCert: string;
  serverKey: string;
  expiredCert: string;
  expiredKey: string;
  /** the CA that signed the server's and the clients' certificates */
  ca: string;
  /** another CA, which signed nothing this server shows */
  wrongCa: string;
  /** a client certificate and key for the role `certuser` */
  clientCert: string;
  clientKey: string;
  /** the same key, encrypted with `clientKeyPassphrase` */
  clientKeyEncrypted: string;
  clientKeyPassphrase: string;
  /** a certificate for `certuser` signed by the wrong CA */
  strangerCert: string;
  strangerKey: string;
}

const openssl = (args: string[], cwd: string) => exec("openssl", args, { cwd });

/** A key and a certificate for `cn`, signed by the CA `ca` (its .crt and .key in `dir`). */
async function issue(
  dir: string,
  ca: string,
  name: string,
  cn: string,
  options: { san?: string; days?: number } = {},
): Promise<void> {
  await openssl(
    [
      "req",
      "-new",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.csr`,
      "-subj",
      `/CN=${cn}`,
    ],
    dir,
  );
  const ext = path.join(dir, `${name}.ext`);
  await writeFile(
    ext,
    options.san ? `subjectAltName=${options.san}\n` : "basicConstraints=CA:FALSE\n",
  );
  await openssl(
    [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      `${ca}.crt`,
      "-CAkey",
      `${ca}.key`,
      "-CAcreateserial",
      "-days",
      String(options.days ?? 30),
      "-extfile",
      ext,
      "-out",
      `${name}.crt`,
    ],
    dir,
  );
}

async function makeCa(dir: string, name: string): Promise<void> {
  await openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.crt`,
      "-days",
      "30",
      "-subj",
      `/CN=hookrelay test ${name}`,
    ],
    dir,
  );
}

/** Makes the certificates in `dir` (created). */
export async function makeCertificates(dir: string): Promise<TlsFiles> {
  await mkdir(dir, { recursive: true });
  await makeCa(dir, "ca");
  await makeCa(dir, "wrong-ca");
  await issue(dir, "ca", "server", "localhost", { san: "DNS:localhost" });
  // valid from the moment it is made until a day before: expired (openssl 3.0 takes -days -1)
  await issue(dir, "ca", "expired", "localhost", { san: "DNS:localhost", days: -1 });
  await issue(dir, "ca", "client", "certuser");
  await issue(dir, "wrong-ca", "stranger", "certuser");
  const passphrase = randomBytes(8).toString("hex");
  await openssl(
    [
      "pkey",
      "-in",
      "client.key",
      "-aes256",
      "-passout",
      `pass:${passphrase}`,
      "-out",
      "client-encrypted.key",
    ],
    dir,
  );
  const f = (name: string) => path.join(dir, name);
  return {
    serverCert: f("server.crt"),
    serverKey: f("server.key"),
    expiredCert: f("expired.crt"),
    expiredKey: f("expired.key"),
    ca: f("ca.crt"),
    wrongCa: f("wrong-ca.crt"),
    clientCert: f("client.crt"),
    clientKey: f("client.key"),
    clientKeyEncrypted: f("client-encrypted.key"),
    clientKeyPassphrase: passphrase,
    strangerCert: f("stranger.crt"),
    strangerKey: f("stranger.key"),
  };
}
