/**
 * RabbitMQ destinations delivering for real (docs/destinations.md): the in-process API and
 * a worker on a test database, publishing to a RabbitMQ node this file starts on 127.0.0.1
 * (test/helpers/rabbitmq.ts; skipped where rabbitmq-server is not installed). A message
 * arrives with its id as the AMQP message-id and the Standard Webhooks headers, signed; the
 * password is sealed at rest and masked in answers; a broker that goes away is retried and
 * delivered to once it is back; refused credentials, a virtual host that does not exist
 * or the user may not open, a user who may not write, an unroutable publish and a missing
 * exchange are classified attempts, each saying which; stopping the worker closes its connection. Over amqps
 * (the node's TLS listener, certificates made by the test) the endpoint's tlsCa verifies
 * the broker, and a certificate that does not verify is an attempt of kind `tls`.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Channel, GetMessage } from "amqplib";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { deliveryCalls } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type RabbitMq, rabbitmqInstalled, startRabbitMq } from "./helpers/rabbitmq.ts";
import { waitFor } from "./helpers/receiver.ts";
import { startTcpForwarder, type TcpForwarder } from "./helpers/tcp-forwarder.ts";
import { makeCertificates, type TlsFiles } from "./helpers/tls-certificates.ts";

const KEY = Buffer.alloc(32, 7).toString("base64");
let h: Harness;
let rmq: RabbitMq;
let forwarder: TcpForwarder;
let worker: ReturnType<Harness["startWorker"]>;
let pkiDir: string;
let pki: TlsFiles;

const { newApp, newEndpoint, send, waitForStatus } = deliveryCalls(() => h);

/** Attempts of a message through the API (its detail included). */
async function apiAttempts(appId: string, msgId: string) {
  const res = await h.call("GET", `/api/v1/app/${appId}/attempt/msg/${msgId}`);
  expect(res.status).toBe(200);
  return res.body.data as Array<{
    errorKind: string | null;
    error: string | null;
    detail: Record<string, unknown>;
  }>;
}

/** A queue of the test's own, bound nowhere but to the default exchange by its name. */
async function queue(name: string): Promise<Channel> {
  const conn = await rmq.client();
  const ch = await conn.createChannel();
  await ch.assertQueue(name, { durable: false });
  return ch;
}

async function getOne(ch: Channel, name: string): Promise<GetMessage> {
  let got: GetMessage | false = false;
  await waitFor(async () => {
    got = await ch.get(name, { noAck: true });
    return got !== false;
  }, 15_000);
  return got as unknown as GetMessage;
}

describe.skipIf(!rabbitmqInstalled)("RabbitMQ destinations", () => {
  beforeAll(async () => {
    pkiDir = await mkdtemp(path.join(tmpdir(), "hookrelay-amqps-"));
    pki = await makeCertificates(pkiDir);
    rmq = await startRabbitMq({
      tls: { certFile: pki.serverCert, keyFile: pki.serverKey, caFile: pki.ca },
    });
    forwarder = await startTcpForwarder(rmq.port);
    h = await startHarness({
      encryptionKey: KEY,
      // the broker's TLS certificate names localhost only
      ssrfAllowlist: ["127.0.0.0/8", "localhost"],
    });
    worker = h.startWorker();
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await forwarder?.close();
    await rmq?.stop();
    if (pkiDir) await rm(pkiDir, { recursive: true, force: true });
  }, 60_000);

  test("a message is published with its id and signed Standard Webhooks headers, confirmed", async () => {
    const ch = await queue("orders");
    const app = await newApp();
    const created = await h.call("POST", `/api/v1/app/${app}/endpoint`, {
      url: rmq.url({ rest: "/?routingKey=orders" }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const ep = created.body.id;
    // the password never comes back, and is sealed at rest
    expect(created.body.destinationKind).toBe("amqp");
    expect(created.body.url).toBe(
      `amqp://${rmq.user}:***@127.0.0.1:${rmq.port}/?routingKey=orders`,
    );
    const { rows } = await h.db.pool.query(
      "select url, destination_kind, destination_secret from endpoints where id = $1",
      [ep],
    );
    expect(rows[0].url).not.toContain(rmq.password);
    expect(rows[0].destination_kind).toBe("amqp");
    expect(rows[0].destination_secret).toMatch(/^enc:v1:/);

    const msg = await send(app, { order: 1042 });
    await waitForStatus(msg, ep, "delivered");
    const got = await getOne(ch, "orders");
    expect(got.properties.messageId).toBe(msg);
    expect(got.properties.contentType).toBe("application/json");
    expect(got.properties.deliveryMode).toBe(2);
    const headers = got.properties.headers as Record<string, string>;
    expect(headers["webhook-id"]).toBe(msg);
    const secret = await h.call("GET", `/api/v1/app/${app}/endpoint/${ep}/secret`);
    const body = got.content.toString();
    expect(JSON.parse(body)).toEqual({ order: 1042 });
    // verifies as a Standard Webhooks delivery (throws if not)
    new Webhook(secret.body.key).verify(body, {
      "webhook-id": headers["webhook-id"]!,
      "webhook-timestamp": String(headers["webhook-timestamp"]),
      "webhook-signature": headers["webhook-signature"]!,
    });
    const [attempt] = await apiAttempts(app, msg);
    expect(attempt!.detail).toEqual({
      transport: "amqp",
      exchange: "",
      routingKey: "orders",
      confirmed: true,
    });

    // a PATCH that sends the masked URL back keeps the password
    const patched = await h.call("PATCH", `/api/v1/app/${app}/endpoint/${ep}`, {
      url: created.body.url,
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const again = await send(app, { order: 1043 });
    await waitForStatus(again, ep, "delivered");
    expect((await getOne(ch, "orders")).properties.messageId).toBe(again);
  });

  test("amqps with the endpoint's CA is confirmed; a broker certificate that does not verify is a tls error", async () => {
    const ch = await queue("secure");
    // the server's certificate names localhost (not 127.0.0.1), which the client checks
    const url = `amqps://${rmq.user}:${rmq.password}@localhost:${rmq.tlsPort}/?routingKey=secure`;
    const app = await newApp();
    const ep = await newEndpoint(app, url, { tlsCa: await readFile(pki.ca, "utf8") });
    const msg = await send(app, { secure: true });
    await waitForStatus(msg, ep, "delivered");
    expect((await getOne(ch, "secure")).properties.messageId).toBe(msg);
    const [attempt] = await apiAttempts(app, msg);
    expect(attempt!.detail).toMatchObject({ transport: "amqp", confirmed: true });

    // the system's CAs, or another CA: the broker's certificate is not trusted
    const other = await newApp();
    const system = await newEndpoint(other, url, { maxAttempts: 1 });
    const wrong = await newEndpoint(other, url, {
      maxAttempts: 1,
      tlsCa: await readFile(pki.wrongCa, "utf8"),
    });
    const refused = await send(other);
    for (const id of [system, wrong]) {
      const row = await waitForStatus(refused, id, "dead_letter");
      expect(row.last_error_kind).toBe("tls");
      const { rows } = await h.db.pool.query(
        "select error from attempts where message_id = $1 and endpoint_id = $2",
        [refused, id],
      );
      expect(rows[0].error).toMatch(/^TLS failed \(\w+\): the broker's certificate is not trusted/);
    }
  });

  test("amqps presents the endpoint's client certificate: the broker's CA's is taken, another's refused", async () => {
    const ch = await queue("secure-mtls");
    const url = `amqps://${rmq.user}:${rmq.password}@localhost:${rmq.tlsPort}/?routingKey=secure-mtls`;
    const ca = await readFile(pki.ca, "utf8");
    const app = await newApp();
    const signed = await newEndpoint(app, url, {
      tlsCa: ca,
      tlsClientCert: await readFile(pki.clientCert, "utf8"),
      tlsClientKey: await readFile(pki.clientKey, "utf8"),
    });
    const stranger = await newEndpoint(app, url, {
      maxAttempts: 1,
      tlsCa: ca,
      tlsClientCert: await readFile(pki.strangerCert, "utf8"),
      tlsClientKey: await readFile(pki.strangerKey, "utf8"),
    });
    const msg = await send(app, { mtls: true });
    await waitForStatus(msg, signed, "delivered");
    expect((await getOne(ch, "secure-mtls")).properties.messageId).toBe(msg);
    const row = await waitForStatus(msg, stranger, "dead_letter");
    expect(row.last_error_kind).toBe("tls");
  });

  test("refused credentials are a credentials error: a dead letter, no retry", async () => {
    const app = await newApp();
    const ep = await newEndpoint(app, rmq.url({ password: "wrong", rest: "/?routingKey=x" }));
    const msg = await send(app);
    const row = await waitForStatus(msg, ep, "dead_letter");
    expect(row.attempt_count).toBe(1);
    expect(row.last_error_kind).toBe("credentials");
    const [attempt] = await apiAttempts(app, msg);
    expect(attempt!.error).toBe(
      "the broker refused the credentials (the URL's user and password): ACCESS_REFUSED - Login was refused using authentication mechanism PLAIN. For details see the broker logfile.",
    );
  });

  test("a virtual host that does not exist or the user may not open, or no write permission, is a credentials error", async () => {
    // a vhost the tests' user has no permissions on, and a user who may only read
    await rmq.ctl("add_vhost", "locked");
    await rmq.ctl("add_user", "reader", "reader-secret");
    await rmq.ctl("set_permissions", "-p", "/", "reader", "", "", ".*");
    const app = await newApp();
    const missing = await newEndpoint(app, rmq.url({ rest: "/no-such-vhost?routingKey=x" }));
    const locked = await newEndpoint(app, rmq.url({ rest: "/locked?routingKey=x" }));
    const reader = await newEndpoint(
      app,
      `amqp://reader:reader-secret@127.0.0.1:${rmq.port}/?routingKey=x`,
    );
    const msg = await send(app);
    const refused = (vhost: string) =>
      `the broker refused to open virtual host "${vhost}": it does not exist or the user may not open it (Expected ConnectionOpenOk; got <ConnectionClose channel:0>)`;
    for (const [ep, error] of [
      [missing, refused("no-such-vhost")],
      [locked, refused("locked")],
      [
        reader,
        "the broker does not let the user publish there: ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'reader'",
      ],
    ] as const) {
      const row = await waitForStatus(msg, ep, "dead_letter");
      expect(row.attempt_count).toBe(1);
      expect(row.last_error_kind).toBe("credentials");
      const { rows } = await h.db.pool.query(
        "select error from attempts where message_id = $1 and endpoint_id = $2",
        [msg, ep],
      );
      expect(rows[0].error).toBe(error);
    }
  });

  test("an unroutable publish (no queue bound) is refused by the broker: retried", async () => {
    const app = await newApp();
    const ep = await newEndpoint(app, rmq.url({ rest: "/?routingKey=nobody-listens" }), {
      maxAttempts: 2,
    });
    const msg = await send(app);
    const row = await waitForStatus(msg, ep, "dead_letter");
    expect(row.attempt_count).toBe(2);
    expect(row.last_error_kind).toBe("broker_refused");
    const [first] = await apiAttempts(app, msg);
    expect(first!.detail).toMatchObject({ confirmed: false, returned: true });
  });

  test("a missing exchange is refused by the broker: retried", async () => {
    const app = await newApp();
    const ep = await newEndpoint(app, rmq.url({ rest: "/?exchange=no-such-exchange" }), {
      maxAttempts: 2,
    });
    const msg = await send(app);
    const row = await waitForStatus(msg, ep, "dead_letter");
    expect(row.attempt_count).toBe(2);
    expect(row.last_error_kind).toBe("broker_refused");
    const [attempt] = await apiAttempts(app, msg);
    expect(attempt!.error).toBe(
      "the broker refused the publish: NOT_FOUND - no exchange 'no-such-exchange' in vhost '/'",
    );
  });

  test("a broker that goes away is retried, and delivered to once it is back", async () => {
    const ch = await queue("comeback");
    const app = await newApp();
    const url = `amqp://${rmq.user}:${rmq.password}@127.0.0.1:${forwarder.port}/?routingKey=comeback`;
    const ep = await newEndpoint(app, url, { maxAttempts: 50, failureThreshold: 1000 });
    // connected once, so the worker holds a connection that the outage breaks
    const first = await send(app, { n: 1 });
    await waitForStatus(first, ep, "delivered");
    await getOne(ch, "comeback");

    await forwarder.down();
    const msg = await send(app, { n: 2 });
    await waitFor(async () => {
      const { rows } = await h.db.pool.query(
        "select count(*)::int as n from attempts where message_id = $1 and outcome = 'failure'",
        [msg],
      );
      return rows[0].n >= 2;
    }, 15_000);
    await forwarder.up();
    await waitForStatus(msg, ep, "delivered");
    expect((await getOne(ch, "comeback")).properties.messageId).toBe(msg);
  });

  test("a broker host the SSRF guard refuses is a 422 when saved", async () => {
    const app = await newApp();
    const res = await h.call("POST", `/api/v1/app/${app}/endpoint`, {
      url: "amqp://u:p@169.254.169.254:5672/",
    });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe("url_not_allowed");
  });

  test("stopping the worker closes its broker connections", async () => {
    const ch = await queue("closing");
    const app = await newApp();
    const url = `amqp://${rmq.user}:${rmq.password}@127.0.0.1:${forwarder.port}/?routingKey=closing`;
    const ep = await newEndpoint(app, url);
    const msg = await send(app);
    await waitForStatus(msg, ep, "delivered");
    await getOne(ch, "closing");
    expect(forwarder.open).toBeGreaterThan(0);
    await worker.stop();
    await waitFor(async () => forwarder.open === 0, 10_000);
  });
});
