/**
 * NATS JetStream over TLS (docs/destinations.md): a `tls://` endpoint delivering for real
 * to a nats-server this file starts on 127.0.0.1 that takes TLS connections only and
 * requires a client certificate (test/helpers/nats.ts), with a certificate for localhost
 * from a throwaway CA made with openssl (test/helpers/tls-certificates.ts). Delivered with
 * the endpoint's `tlsCa` and a client certificate of the server's CA; a `tls` attempt
 * error, saying which, when the server's certificate is not trusted or the client
 * certificate comes from another CA. And a second server that takes a token instead of a
 * user: `nats://:TOKEN@host` logs in with it (sealed and masked as a password); a wrong one
 * is a credentials dead letter.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { deliveryCalls } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type NatsServer, natsInstalled, startNats } from "./helpers/nats.ts";
import { makeCertificates, type TlsFiles } from "./helpers/tls-certificates.ts";

const KEY = Buffer.alloc(32, 9).toString("base64");
let h: Harness;
let nats: NatsServer;
let tokenNats: NatsServer;
let pkiDir: string;
let pki: TlsFiles;

const { newApp, newEndpoint, send, waitForStatus } = deliveryCalls(() => h);

/** The attempts' errors of a message at one endpoint. */
async function errors(msgId: string, endpointId: string): Promise<string[]> {
  const { rows } = await h.db.pool.query(
    "select error from attempts where message_id = $1 and endpoint_id = $2",
    [msgId, endpointId],
  );
  return rows.map((r) => r.error);
}

describe.skipIf(!natsInstalled)("NATS JetStream over TLS", () => {
  beforeAll(async () => {
    pkiDir = await mkdtemp(path.join(tmpdir(), "hookrelay-nats-tls-"));
    pki = await makeCertificates(pkiDir);
    nats = await startNats({
      tls: {
        certFile: pki.serverCert,
        keyFile: pki.serverKey,
        caFile: pki.ca,
        clientCertFile: pki.clientCert,
        clientKeyFile: pki.clientKey,
      },
    });
    const manager = await (await nats.client()).jetstreamManager();
    await manager.streams.add({ name: "SECURE", subjects: ["secure.>"] });
    tokenNats = await startNats({ token: "nats-token-1" });
    const tokens = await (await tokenNats.client()).jetstreamManager();
    await tokens.streams.add({ name: "TOKENS", subjects: ["token.>"] });
    h = await startHarness({
      encryptionKey: KEY,
      // the server's certificate names localhost only
      ssrfAllowlist: ["127.0.0.0/8", "localhost"],
    });
    h.startWorker();
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await nats?.stop();
    await tokenNats?.stop();
    if (pkiDir) await rm(pkiDir, { recursive: true, force: true });
  }, 60_000);

  const url = (subject: string) =>
    `tls://${nats.user}:${nats.password}@localhost:${nats.port}?subject=${subject}&stream=SECURE`;

  test("tls:// with the endpoint's CA and a client certificate of the server's CA is acked", async () => {
    const app = await newApp();
    const created = await h.call("POST", `/api/v1/app/${app}/endpoint`, {
      url: url("secure.orders"),
      tlsCa: await readFile(pki.ca, "utf8"),
      tlsClientCert: await readFile(pki.clientCert, "utf8"),
      tlsClientKey: await readFile(pki.clientKey, "utf8"),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.destinationKind).toBe("nats");
    expect(created.body.url).toBe(
      `tls://${nats.user}:***@localhost:${nats.port}?subject=secure.orders&stream=SECURE`,
    );
    const msg = await send(app, { secure: true });
    await waitForStatus(msg, created.body.id, "delivered");
    const manager = await (await nats.client()).jetstreamManager();
    const stored = await manager.streams.getMessage("SECURE", { last_by_subj: "secure.orders" });
    expect(stored.header.get("Nats-Msg-Id")).toBe(msg);
  });

  test("a server certificate the endpoint does not trust, or a client certificate of another CA, is a tls error", async () => {
    const app = await newApp();
    const ca = await readFile(pki.ca, "utf8");
    // the system's CAs, or another CA: the server's certificate is not trusted
    const system = await newEndpoint(app, url("secure.a"), { maxAttempts: 1 });
    const wrongCa = await newEndpoint(app, url("secure.b"), {
      maxAttempts: 1,
      tlsCa: await readFile(pki.wrongCa, "utf8"),
    });
    // trusted, but the client certificate is another CA's: the server refuses it
    const stranger = await newEndpoint(app, url("secure.c"), {
      maxAttempts: 1,
      tlsCa: ca,
      tlsClientCert: await readFile(pki.strangerCert, "utf8"),
      tlsClientKey: await readFile(pki.strangerKey, "utf8"),
    });
    const msg = await send(app);
    for (const ep of [system, wrongCa]) {
      const row = await waitForStatus(msg, ep, "dead_letter");
      expect(row.last_error_kind).toBe("tls");
      expect((await errors(msg, ep))[0]).toMatch(
        /^TLS failed \(\w+\): the broker's certificate is not trusted/,
      );
    }
    const row = await waitForStatus(msg, stranger, "dead_letter");
    expect(row.last_error_kind).toBe("tls");
    expect((await errors(msg, stranger))[0]).toMatch(
      /^TLS failed \([^)]+\): .*(may require a client certificate|refused the handshake)/,
    );
  });

  test("nats://:TOKEN@host logs in with the token, sealed and masked; a wrong token is a credentials dead letter", async () => {
    const app = await newApp();
    const at = (token: string) =>
      `nats://:${token}@127.0.0.1:${tokenNats.port}?subject=token.orders&stream=TOKENS`;
    const created = await h.call("POST", `/api/v1/app/${app}/endpoint`, {
      url: at("nats-token-1"),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.url).toBe(
      `nats://:***@127.0.0.1:${tokenNats.port}?subject=token.orders&stream=TOKENS`,
    );
    const wrong = await newEndpoint(app, at("not-the-token"));
    const msg = await send(app);
    await waitForStatus(msg, created.body.id, "delivered");
    const row = await waitForStatus(msg, wrong, "dead_letter");
    expect(row.last_error_kind).toBe("credentials");
    expect(await errors(msg, wrong)).toEqual([
      "the server refused the credentials (the URL's user and password, or token): Authorization Violation",
    ]);
  });
});
