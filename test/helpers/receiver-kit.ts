/**
 * Shared steps of the receiver-kit integration tests: a hookrelay app and endpoint with a
 * known secret pointing at a receiver under test, messages sent through the API (raw JSON,
 * so the payload keeps bytes a re-serialization would change), and raw HTTP requests the
 * tests replay or tamper with.
 */
import { secretKey, signOne } from "../../src/delivery/sign.ts";
import type { Harness } from "./harness.ts";

export interface Captured {
  headers: Record<string, string>;
  body: string;
}

export interface PostResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: response JSON; tests assert on it field by field
  body: any;
}

/** An app with one endpoint at `url` signing with `secret`. */
export async function endpointFor(
  h: Harness,
  name: string,
  url: string,
  secret: string,
): Promise<{ appId: string; endpointId: string }> {
  const app = await h.call("POST", "/api/v1/app", { name, uid: name });
  if (app.status !== 201) throw new Error(`app: ${app.status} ${JSON.stringify(app.body)}`);
  const ep = await h.call("POST", `/api/v1/app/${app.body.id}/endpoint`, { url, secret });
  if (ep.status !== 201) throw new Error(`endpoint: ${ep.status} ${JSON.stringify(ep.body)}`);
  return { appId: app.body.id, endpointId: ep.body.id };
}

/** Sends one message whose payload is `payloadJson` verbatim; returns its id. */
export async function sendRaw(h: Harness, appId: string, payloadJson: string): Promise<string> {
  const res = await h.call(
    "POST",
    `/api/v1/app/${appId}/msg`,
    `{"eventType":"order.paid","payload":${payloadJson}}`,
  );
  if (res.status !== 202) throw new Error(`send: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

export async function resend(h: Harness, appId: string, msgId: string, endpointId: string) {
  const res = await h.call(
    "POST",
    `/api/v1/app/${appId}/msg/${msgId}/endpoint/${endpointId}/resend`,
  );
  if (res.status !== 202) throw new Error(`resend: ${res.status} ${JSON.stringify(res.body)}`);
}

export async function deliveryStatuses(h: Harness, msgIds: string[]): Promise<string[]> {
  const { rows } = await h.db.pool.query<{ status: string }>(
    "select status from deliveries where message_id = any($1::text[]) order by message_id",
    [msgIds],
  );
  return rows.map((r) => r.status);
}

/** The three webhook headers of a received request, for replaying it. */
export function webhookHeaders(headers: Record<string, unknown>): Record<string, string> {
  const pick = (name: string) => String(headers[name] ?? "");
  return {
    "webhook-id": pick("webhook-id"),
    "webhook-timestamp": pick("webhook-timestamp"),
    "webhook-signature": pick("webhook-signature"),
  };
}

/** The same message signed again at another time (or with another secret). */
export function resigned(captured: Captured, secret: string, timestamp: number): Captured {
  const id = captured.headers["webhook-id"]!;
  return {
    body: captured.body,
    headers: {
      "webhook-id": id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": signOne(secretKey(secret), id, timestamp, captured.body),
    },
  };
}

export async function post(url: string, request: Captured): Promise<PostResult> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...request.headers },
    body: request.body,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

export const nowSec = () => Math.floor(Date.now() / 1000);

export interface AttemptRow {
  outcome: string;
  status_code: number | null;
  response_body: string | null;
}

/** Every attempt to deliver a message, oldest first. */
export async function attemptsOf(h: Harness, msgId: string): Promise<AttemptRow[]> {
  const { rows } = await h.db.pool.query<AttemptRow>(
    "select outcome, status_code, response_body from attempts where message_id = $1::text order by id",
    [msgId],
  );
  return rows;
}
