import { describe, expect, test } from "vitest";
import { SsrfBlockedError } from "../security/ssrf-guard.ts";
import { amqpFailure } from "./amqp/amqp-transport.ts";
import { type BrokerAttemptError, underDeadline } from "./broker-outcome.ts";
import { AttemptAbort } from "./http-sender.ts";
import { natsFailure } from "./nats/nats-transport.ts";

describe("what a broker's error means", () => {
  test("common: SSRF refusals are permanent, network trouble transient", () => {
    expect(amqpFailure(new SsrfBlockedError("10.0.0.1", "private"))).toMatchObject({
      verdict: "permanent",
      kind: "ssrf_blocked",
    });
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    expect(natsFailure(refused, "s")).toMatchObject({ verdict: "transient", kind: "connection" });
    const dns = Object.assign(new Error("nope"), { code: "ENOTFOUND" });
    expect(amqpFailure(dns)).toMatchObject({ kind: "dns" });
  });

  test("AMQP: refused logins and virtual hosts are credentials, 404s refusals", () => {
    const login = new Error(
      'Handshake terminated by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - Login was refused"',
    );
    expect(amqpFailure(login)).toEqual({
      verdict: "permanent",
      kind: "credentials",
      message:
        "the broker refused the credentials (the URL's user and password): ACCESS_REFUSED - Login was refused",
    });
    const vhost = new Error("Expected ConnectionOpenOk; got <ConnectionClose channel:0>");
    expect(amqpFailure(vhost, "prod")).toMatchObject({
      kind: "credentials",
      message: expect.stringMatching(
        /^the broker refused to open virtual host "prod": it does not/,
      ),
    });
    const write = Object.assign(
      new Error(
        `Channel closed by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'x'"`,
      ),
      { code: 403 },
    );
    expect(amqpFailure(write)).toEqual({
      verdict: "permanent",
      kind: "credentials",
      message: `the broker does not let the user publish there: ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'x'`,
    });
    const exchange = Object.assign(new Error("Channel closed by server: 404 (NOT-FOUND)"), {
      code: 404,
    });
    expect(amqpFailure(exchange)).toMatchObject({ verdict: "transient", kind: "broker_refused" });
  });

  test("NATS: authorization is credentials, no responders a refusal, TIMEOUT a timeout", () => {
    const auth = Object.assign(new Error("'Authorization Violation'"), {
      code: "AUTHORIZATION_VIOLATION",
    });
    expect(natsFailure(auth, "s")).toMatchObject({ verdict: "permanent", kind: "credentials" });
    const none = Object.assign(new Error("503"), { code: "503" });
    expect(natsFailure(none, "orders")).toMatchObject({ kind: "broker_refused" });
    expect(natsFailure(none, "orders").message).toContain('"orders"');
    const late = Object.assign(new Error("TIMEOUT"), { code: "TIMEOUT" });
    expect(natsFailure(late, "s")).toMatchObject({ kind: "timeout" });
  });
});

describe("underDeadline", () => {
  test("a publish that outlives the deadline is a timeout; an abort a connection error", async () => {
    const never = new Promise<void>(() => {});
    const late = await underDeadline(never, 10, new AttemptAbort()).catch((e: unknown) => e);
    expect((late as BrokerAttemptError).failure.kind).toBe("timeout");
    const abort = new AttemptAbort();
    const pending = underDeadline(never, 60_000, abort).catch((e: unknown) => e);
    abort.abort();
    expect(((await pending) as BrokerAttemptError).failure.kind).toBe("connection");
    expect(await underDeadline(Promise.resolve(7), 1_000, new AttemptAbort())).toBe(7);
  });
});
