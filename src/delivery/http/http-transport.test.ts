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
