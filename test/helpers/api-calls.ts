/**
 * Calls of the management API for the api-*.test.ts files: raw-text requests, creating
 * apps, endpoints (pointing at the file's receiver) and messages with the status each
 * must answer, the deliveries a message fanned out to, and the `{ code, detail }` shape of
 * a 4xx.
 *
 * `apiCalls(() => ({ h, rx }))` binds the calls to a file's harness and receiver, which
 * its beforeAll starts; the getter is read on every call.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import type { CallResult, Harness } from "./harness.ts";
import type { Receiver } from "./receiver.ts";

export const V1 = "/api/v1";
export type Res = CallResult;
/** A parsed JSON response body (the harness types it loosely). */
export type Json = CallResult["body"];
export interface Page {
  data: { id: string }[];
  iterator: string | null;
  prevIterator: string | null;
  done: boolean;
}

let seq = 0;
export const unique = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

/** A 4xx answered with `{ code, detail }`, the detail matching `detail`. */
export function expectClientError(res: Res, detail: RegExp, status?: number) {
  if (status !== undefined) expect(res.status).toBe(status);
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expect(res.body).toEqual({ code: expect.any(String), detail: expect.any(String) });
  expect(res.body.detail).toMatch(detail);
}

export const isoDate = (s: unknown) => typeof s === "string" && !Number.isNaN(Date.parse(s));
export const newSecret = (bytes = 32) => `whsec_${randomBytes(bytes).toString("base64")}`;

export function apiCalls(get: () => { h: Harness; rx: Receiver }) {
  /** A request with a raw text body (not re-serialized), the admin key unless overridden. */
  async function raw(
    method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
    url: string,
    payload?: string,
    headers: Record<string, string> = {},
  ) {
    const { h } = get();
    return h.api.inject({
      method,
      url,
      headers: {
        authorization: `Bearer ${h.adminKey}`,
        ...(payload !== undefined && { "content-type": "application/json" }),
        ...headers,
      },
      payload,
    });
  }

  async function createApp(body: Record<string, unknown> = {}): Promise<Json> {
    const res = await get().h.call("POST", `${V1}/app`, { name: unique("app"), ...body });
    expect(res.status).toBe(201);
    return res.body;
  }

  async function createEndpoint(appId: string, body: Record<string, unknown> = {}): Promise<Json> {
    const { h, rx } = get();
    const res = await h.call("POST", `${V1}/app/${appId}/endpoint`, {
      url: `${rx.url}/${unique("ep")}`,
      ...body,
    });
    expect(res.status).toBe(201);
    return res.body;
  }

  async function sendMessage(appId: string, body: Record<string, unknown>): Promise<Json> {
    const res = await get().h.call("POST", `${V1}/app/${appId}/msg`, body);
    expect(res.status).toBe(202);
    return res.body;
  }

  async function deliveryEndpoints(messageId: string): Promise<string[]> {
    const { rows } = await get().h.db.pool.query(
      "select endpoint_id from deliveries where message_id = $1",
      [messageId],
    );
    return rows.map((r: { endpoint_id: string }) => r.endpoint_id).sort();
  }

  return { raw, createApp, createEndpoint, sendMessage, deliveryEndpoints };
}
