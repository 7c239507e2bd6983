/**
 * NATS JetStream destinations delivering for real (docs/destinations.md): the in-process
 * API and a worker on a test database, publishing to a nats-server with JetStream this file
 * starts on 127.0.0.1 (test/helpers/nats.ts; skipped where nats-server is not installed).
 * A message is stored with its id as Nats-Msg-Id and the Standard Webhooks headers,
 * signed, acked with its stream and sequence; a resend within the duplicate window is
 * acked as a duplicate and stored once; a server that goes away is retried and delivered
 * to once it is back; refused credentials (which open the circuit like any failure), a
 * subject the user may not publish to, a user who may not subscribe to the acks' inbox, no
 * stream and the wrong stream are classified, each with a sentence saying which.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { makeNatsTransport } from "../src/delivery/nats/nats-transport.ts";
import type { OutboundDelivery } from "../src/delivery/transport.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { deliveryCalls } from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type NatsServer, natsInstalled, startNats } from "./helpers/nats.ts";
import { waitFor } from "./helpers/receiver.ts";

let h: Harness;
let nats: NatsServer;

const { newApp, newEndpoint, send, deliveryRow, waitForStatus } = deliveryCalls(() => h);

async function apiAttempts(appId: string, msgId: string) {
  const res = await h.call("GET", `/api/v1/app/${appId}/attempt/msg/${msgId}`);
  expect(res.status).toBe(200);
  // newest first
  return res.body.data as Array<{
    errorKind: string | null;
    error: string | null;
    detail: Record<string, unknown>;
  }>;
}

async function jsm() {
  return (await nats.client()).jetstreamManager();
}

describe.skipIf(!natsInstalled)("NATS JetStream destinations", () => {
  beforeAll(async () => {
    nats = await startNats();
    const manager = await jsm();
    await manager.streams.add({
      name: "HOOKS",
      subjects: ["hooks.>"],
      // the stream's de-duplication window, in nanoseconds
      duplicate_window: 60_000_000_000,
    });
    h = await startHarness();
    h.startWorker();
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await nats?.stop();
  }, 60_000);

  test("a message is stored with its id and signed Standard Webhooks headers, acked", async () => {
    const app = await newApp();
    const created = await h.call("POST", `/api/v1/app/${app}/endpoint`, {
      url: nats.url({ rest: "?subject=hooks.orders&stream=HOOKS" }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const ep = created.body.id;
    expect(created.body.destinationKind).toBe("nats");
    expect(created.body.url).toBe(
      `nats://${nats.user}:***@127.0.0.1:${nats.port}?subject=hooks.orders&stream=HOOKS`,
    );
    const msg = await send(app, { order: 7 });
    await waitForStatus(msg, ep, "delivered");
    const [attempt] = await apiAttempts(app, msg);
    expect(attempt!.detail).toMatchObject({
      transport: "nats",
      subject: "hooks.orders",
      stream: "HOOKS",
      duplicate: false,
    });
    const seq = attempt!.detail.seq as number;
    const stored = await (await jsm()).streams.getMessage("HOOKS", { seq });
    expect(stored.subject).toBe("hooks.orders");
    expect(stored.header.get("Nats-Msg-Id")).toBe(msg);
    const body = new TextDecoder().decode(stored.data);
    expect(JSON.parse(body)).toEqual({ order: 7 });
    const secret = await h.call("GET", `/api/v1/app/${app}/endpoint/${ep}/secret`);
    new Webhook(secret.body.key).verify(body, {
      "webhook-id": stored.header.get("webhook-id"),
      "webhook-timestamp": stored.header.get("webhook-timestamp"),
      "webhook-signature": stored.header.get("webhook-signature"),
    });
    expect(stored.header.get("webhook-id")).toBe(msg);

    // a resend publishes the same id again: the stream keeps one copy and says so
    const before = (await (await jsm()).streams.info("HOOKS")).state.messages;
    const resent = await h.call("POST", `/api/v1/app/${app}/msg/${msg}/endpoint/${ep}/resend`);
    expect(resent.status, JSON.stringify(resent.body)).toBeLessThan(300);
    let latest: Record<string, unknown> | undefined;
    await waitFor(async () => {
      const attempts = await apiAttempts(app, msg);
      latest = attempts.length >= 2 ? attempts[0]!.detail : undefined;
      return latest !== undefined;
    }, 15_000);
    expect(latest).toMatchObject({ duplicate: true, seq });
    expect((await (await jsm()).streams.info("HOOKS")).state.messages).toBe(before);
  });

  test("refused credentials are a credentials error: a dead letter, no retry", async () => {
    const app = await newApp();
    const wrong = await newEndpoint(app, nats.url({ password: "wrong", rest: "?subject=hooks.x" }));
    const nobody = await newEndpoint(
      app,
      nats.url({ user: "nobody", password: "nobody", rest: "?subject=hooks.x" }),
    );
    const msg = await send(app);
    for (const ep of [wrong, nobody]) {
      const row = await waitForStatus(msg, ep, "dead_letter");
      expect(row.attempt_count).toBe(1);
      expect(row.last_error_kind).toBe("credentials");
    }
    const attempts = await apiAttempts(app, msg);
    expect(attempts).toHaveLength(2);
    for (const a of attempts) {
      expect(a.error).toBe(
        "the server refused the credentials (the URL's user and password, or token): Authorization Violation",
      );
    }
  });

  test("refused credentials count for the circuit breaker: it opens, and the next delivery waits", async () => {
    const app = await newApp();
    const ep = await newEndpoint(app, nats.url({ password: "wrong", rest: "?subject=hooks.x" }), {
      failureThreshold: 2,
    });
    for (const n of [1, 2]) {
      const msg = await send(app, { n });
      await waitForStatus(msg, ep, "dead_letter");
    }
    const { rows } = await h.db.pool.query(
      "select circuit_state from endpoint_health where endpoint_id = $1",
      [ep],
    );
    expect(rows[0].circuit_state).toBe("open");
    const third = await send(app, { n: 3 });
    await new Promise((r) => setTimeout(r, 500));
    const row = await deliveryRow(third, ep);
    expect(row).toMatchObject({ status: "pending", attempt_count: 0 });
  });

  test("a subject the user may not publish to, or no inbox for acks, is a credentials error; the worker goes on", async () => {
    const app = await newApp();
    const allowed = await newEndpoint(
      app,
      nats.url({ user: "narrow", password: "narrow", rest: "?subject=hooks.narrow.ok" }),
    );
    const denied = await newEndpoint(
      app,
      nats.url({ user: "narrow", password: "narrow", rest: "?subject=hooks.denied" }),
    );
    const deaf = await newEndpoint(
      app,
      nats.url({ user: "deaf", password: "deaf", rest: "?subject=hooks.deaf" }),
    );
    for (const round of [1, 2]) {
      // (the second round publishes on the connections the first opened, or their successors)
      const msg = await send(app, { round });
      await waitForStatus(msg, allowed, "delivered");
      for (const ep of [denied, deaf]) {
        const row = await waitForStatus(msg, ep, "dead_letter");
        expect(row.attempt_count).toBe(1);
        expect(row.last_error_kind).toBe("credentials");
      }
      const errors = (await apiAttempts(app, msg)).map((a) => a.error);
      expect(errors).toContain(
        'the server does not let the user publish to subject "hooks.denied": Permissions Violation for Publish to "hooks.denied"',
      );
      expect(errors).toContainEqual(
        expect.stringMatching(
          /^the server does not let the user subscribe to its reply inbox \(_INBOX\.>\), so no ack can come back: Permissions Violation for Subscription to "_INBOX\./,
        ),
      );
    }
  });

  test("no stream for the subject, or another stream than expected, is refused: retried", async () => {
    const app = await newApp();
    const none = await newEndpoint(app, nats.url({ rest: "?subject=nowhere.x" }), {
      maxAttempts: 2,
    });
    const wrong = await newEndpoint(app, nats.url({ rest: "?subject=hooks.y&stream=OTHER" }), {
      maxAttempts: 2,
    });
    const msg = await send(app);
    for (const ep of [none, wrong]) {
      const row = await waitForStatus(msg, ep, "dead_letter");
      expect(row.attempt_count).toBe(2);
      expect(row.last_error_kind).toBe("broker_refused");
    }
  });

  test("a server that goes away is retried, and delivered to once it is back", async () => {
    const app = await newApp();
    const ep = await newEndpoint(app, nats.url({ rest: "?subject=hooks.comeback" }), {
      maxAttempts: 50,
      failureThreshold: 1000,
    });
    const first = await send(app, { n: 1 });
    await waitForStatus(first, ep, "delivered");
    await nats.down();
    const msg = await send(app, { n: 2 });
    await waitFor(async () => {
      const { rows } = await h.db.pool.query(
        "select count(*)::int as n from attempts where message_id = $1 and outcome = 'failure'",
        [msg],
      );
      return rows[0].n >= 2;
    }, 15_000);
    await nats.up();
    await waitForStatus(msg, ep, "delivered");
    const [attempt] = await apiAttempts(app, msg);
    expect(attempt!.detail).toMatchObject({ stream: "HOOKS", duplicate: false });
  });

  test("a url with an option NATS does not take is a 422 naming it", async () => {
    const app = await newApp();
    const res = await h.call("POST", `/api/v1/app/${app}/endpoint`, {
      url: nats.url({ rest: "?exchange=x" }),
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/subject and stream, not "exchange"/);
  });

  test("a connection no publish used for idleCloseMs is closed; the next publish opens one", async () => {
    const transport = makeNatsTransport({
      secretBox: makeSecretBox(undefined),
      ssrfGuard: makeSsrfGuard({ allowlist: ["127.0.0.0/8"] }),
      idleCloseMs: 200,
    });
    try {
      const delivery: OutboundDelivery = {
        id: 1,
        messageId: "msg_idle_1",
        endpointId: "ep_idle",
        attemptCount: 0,
        eventType: "hooks.idle",
        eventId: null,
        payload: "{}",
        url: `nats://${nats.user}@127.0.0.1:${nats.port}`,
        headers: {},
        timeoutMs: 5_000,
        secrets: [],
        method: "POST",
        bodyFormat: "json",
        urlToken: null,
        missingFields: "fail",
        successRule: null,
        destinationKind: "nats",
        destinationSecret: nats.password,
      };
      const before = await nats.connections("hookrelay");
      const send = async (messageId: string) => {
        const prepared = transport.prepare({ ...delivery, messageId });
        if (!prepared.ok) throw new Error(prepared.note);
        return transport.send(prepared.request, transport.newAbort());
      };
      expect((await send("msg_idle_1")).verdict).toBe("success");
      expect(await nats.connections("hookrelay")).toBe(before + 1);
      await waitFor(async () => (await nats.connections("hookrelay")) === before, 5_000);
      expect((await send("msg_idle_2")).verdict).toBe("success");
      expect(await nats.connections("hookrelay")).toBe(before + 1);
    } finally {
      await transport.close();
    }
  });
});
