import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { expect, test } from "vitest";
import type { ClaimedDelivery } from "../../queue/claim-deliveries.ts";
import { makeSecretBox } from "../../security/secret-box.ts";
import { generateSecret } from "../sign.ts";
import { makeRequestPreparer, USER_AGENT } from "./prepare-request.ts";

function claim(extra: Partial<ClaimedDelivery> = {}): ClaimedDelivery {
  return {
    id: 1,
    messageMs: 0,
    messageId: "msg_1",
    endpointId: "ep_1",
    appId: "app_1",
    attemptCount: 0,
    maxAttempts: 5,
    trigger: "scheduled",
    eventType: "t",
    payload: '{"a":1}',
    url: "https://example.test/hook",
    headers: { "x-extra": "1" },
    timeoutMs: 2_000,
    retryBaseMs: null,
    retryCapMs: null,
    secrets: [generateSecret()],
    isProbe: false,
    eventId: null,
    method: "POST",
    bodyFormat: "json",
    urlToken: null,
    missingFields: "fail",
    successRule: null,
    failureNotified: false,
    ...extra,
  };
}

test("a claimed delivery becomes a signed request: URL, body, timeout, endpoint headers and the Standard Webhooks headers", () => {
  const c = claim();
  const prepared = makeRequestPreparer({ secretBox: makeSecretBox(undefined) }).prepare(
    c,
    1_700_000_000_500,
  );
  expect(prepared.ok).toBe(true);
  if (!prepared.ok) return;
  const { request } = prepared;
  expect(request).toMatchObject({ url: c.url, body: c.payload, timeoutMs: 2_000 });
  expect(request.headers).toMatchObject({
    "x-extra": "1",
    "content-type": "application/json",
    "user-agent": USER_AGENT,
    "webhook-id": "msg_1",
    "webhook-timestamp": "1700000000",
  });
  // signed for the send time: a receiver's library (which checks the timestamp against its
  // own clock) accepts a request prepared now
  const fresh = makeRequestPreparer({ secretBox: makeSecretBox(undefined) }).prepare(c);
  if (!fresh.ok) throw new Error("not prepared");
  expect(() => new Webhook(c.secrets[0]!).verify(c.payload, fresh.request.headers)).not.toThrow();
});

test("every secret that signs right now signs the request (a rotation's grace)", () => {
  const c = claim({ secrets: [generateSecret(), generateSecret()] });
  const prepared = makeRequestPreparer({ secretBox: makeSecretBox(undefined) }).prepare(c);
  if (!prepared.ok) throw new Error("not prepared");
  expect(prepared.request.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
  for (const secret of c.secrets)
    expect(() => new Webhook(secret).verify(c.payload, prepared.request.headers)).not.toThrow();
});

test("a secret sealed under a key this process lacks: no request, a transient signing failure", () => {
  const sealed = makeSecretBox(randomBytes(32).toString("base64")).seal(generateSecret());
  const prepared = makeRequestPreparer({ secretBox: makeSecretBox(undefined) }).prepare(
    claim({ secrets: [sealed] }),
  );
  expect(prepared.ok).toBe(false);
  if (prepared.ok) return;
  expect(prepared.outcome).toMatchObject({
    verdict: "transient",
    errorKind: "signing",
    detail: { transport: "http", statusCode: null },
    latencyMs: 0,
    response: null,
    retryAfterMs: null,
  });
  expect(prepared.note).toBe("signing secret could not be opened");
  expect(prepared.outcome.error).toMatch(/^signing secret could not be opened: /);
});

test("a custom User-Agent replaces hookrelay's: one user-agent header, whatever its case", () => {
  const preparer = makeRequestPreparer({ secretBox: makeSecretBox(undefined) });
  const prepared = preparer.prepare(claim({ headers: { "User-Agent": "acme-relay/2" } }));
  if (!prepared.ok) throw new Error("not prepared");
  const agents = Object.entries(prepared.request.headers).filter(
    ([n]) => n.toLowerCase() === "user-agent",
  );
  expect(agents).toEqual([["User-Agent", "acme-relay/2"]]);
});

test("headers saved before the API refused them are dropped at send time, told once per endpoint", () => {
  const warnings: unknown[] = [];
  const preparer = makeRequestPreparer({
    secretBox: makeSecretBox(undefined),
    logger: { warn: ((obj: unknown) => void warnings.push(obj)) as never },
  });
  const c = claim({
    headers: { Expect: "100-continue", Connection: "close", "x-kept": "1", "Webhook-Id": "forged" },
  });
  for (let i = 0; i < 3; i++) {
    const prepared = preparer.prepare(c);
    if (!prepared.ok) throw new Error("not prepared");
    const names = Object.keys(prepared.request.headers).map((n) => n.toLowerCase());
    expect(names).not.toContain("expect");
    expect(names).not.toContain("connection");
    expect(names.filter((n) => n === "webhook-id")).toHaveLength(1);
    expect(prepared.request.headers["webhook-id"]).toBe("msg_1");
    expect(prepared.request.headers["x-kept"]).toBe("1");
  }
  expect(warnings).toEqual([
    { endpointId: "ep_1", dropped: ["Expect", "Connection", "Webhook-Id"] },
  ]);
});
