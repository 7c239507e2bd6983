import { expect, test } from "vitest";
import { claimedRow } from "../../../test/helpers/worker-fakes.ts";
import { makeSecretBox } from "../../security/secret-box.ts";
import type { AttemptResult, HttpSender, OutboundRequest } from "../http-sender.ts";
import { generateSecret } from "../sign.ts";
import { makeHttpTransport } from "./http-transport.ts";

/** A sender that answers every request with `answer` and keeps what it was asked. */
function fakeSender(answer: Partial<AttemptResult>) {
  const sent: OutboundRequest[] = [];
  const sender: HttpSender = {
    async send(request) {
      sent.push(request);
      return {
        startedAt: new Date(0),
        latencyMs: 3,
        statusCode: 200,
        verdict: "success",
        errorKind: null,
        error: null,
        responseBody: "ok",
        retryAfterMs: null,
        ...answer,
      };
    },
    close: async () => {},
  };
  return { sender, sent };
}

test("HTTP's outcome: the status code is its detail, the response body its stored response", async () => {
  const { sender, sent } = fakeSender({
    statusCode: 503,
    verdict: "transient",
    errorKind: "http",
    error: "HTTP 503",
    responseBody: "busy",
    retryAfterMs: 2_000,
  });
  const http = makeHttpTransport({ sender, secretBox: makeSecretBox(undefined) });
  const prepared = http.prepare(claimedRow(1, { secrets: [generateSecret()] }));
  if (!prepared.ok) throw new Error("not prepared");
  const abort = http.newAbort();
  const outcome = await http.send(prepared.request, abort);
  expect(outcome).toEqual({
    startedAt: new Date(0),
    latencyMs: 3,
    verdict: "transient",
    errorKind: "http",
    error: "HTTP 503",
    response: "busy",
    retryAfterMs: 2_000,
    detail: { transport: "http", statusCode: 503 },
  });
  // the worker's abort handle is the request's signal
  expect(sent[0]!.abort).toBe(abort);
  expect(sent[0]!.headers["webhook-id"]).toBe("msg_1");
});

test("the endpoint's success rule is applied to a 2xx", async () => {
  const { sender } = fakeSender({ responseBody: "status=DUPLICATE" });
  const http = makeHttpTransport({ sender, secretBox: makeSecretBox(undefined) });
  const prepared = http.prepare(
    claimedRow(1, {
      secrets: [generateSecret()],
      successRule: { bodyNotContains: ["DUPLICATE"], onFailure: "permanent" },
    }),
  );
  if (!prepared.ok) throw new Error("not prepared");
  const outcome = await http.send(prepared.request, http.newAbort());
  expect(outcome).toMatchObject({
    verdict: "permanent",
    errorKind: "body_rule",
    error: 'HTTP 200, but the body contains "DUPLICATE"',
    detail: { transport: "http", statusCode: 200 },
  });
});

test("OAuth2: a Bearer header replaces a custom Authorization; a 401 gets a new token and one more request; an echoed token is masked", async () => {
  let issued = 0;
  const sent: OutboundRequest[] = [];
  const sender: HttpSender = {
    async send(request) {
      sent.push(request);
      const ok = (body: string, statusCode = 200): AttemptResult => ({
        startedAt: new Date(0),
        latencyMs: 3,
        statusCode,
        verdict: statusCode === 200 ? "success" : "permanent",
        errorKind: statusCode === 200 ? null : "credentials",
        error: statusCode === 200 ? null : `HTTP ${statusCode}`,
        responseBody: body,
        retryAfterMs: null,
      });
      // the token endpoint, then the receiver: the first token refused, the second echoed
      if (request.url.endsWith("/token"))
        return ok(JSON.stringify({ access_token: `t${++issued}`, expires_in: 60 }));
      return request.headers.authorization === "Bearer t1" ? ok("no", 401) : ok("got t2");
    },
    close: async () => {},
  };
  const box = makeSecretBox(undefined);
  const http = makeHttpTransport({ sender, secretBox: box });
  const prepared = http.prepare(
    claimedRow(1, {
      secrets: [generateSecret()],
      headers: { Authorization: "Basic custom" },
      oauth2: {
        tokenUrl: "http://127.0.0.1:9/token",
        clientId: "c",
        clientSecret: box.seal("s"),
        scope: null,
        audience: null,
        authMethod: "client_secret_basic",
      },
    }),
  );
  if (!prepared.ok) throw new Error("not prepared");
  expect(prepared.shown.secrets).toContain("s");
  const outcome = await http.send(prepared.request, http.newAbort());
  expect(outcome).toMatchObject({ verdict: "success", response: "got ***" });
  const toReceiver = sent.filter((r) => !r.url.endsWith("/token"));
  expect(toReceiver.map((r) => r.headers.authorization)).toEqual(["Bearer t1", "Bearer t2"]);
  expect(toReceiver.every((r) => !("Authorization" in r.headers))).toBe(true);
  expect(issued).toBe(2);
});
