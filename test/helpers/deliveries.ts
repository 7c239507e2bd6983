/**
 * For the delivery tests (the API and a worker on a test database, real HTTP receivers on
 * 127.0.0.1): a receiver whose replies are scripted per path, creating apps, endpoints
 * and messages through the API, and reading back delivery and attempt rows, waiting for a
 * delivery to reach a status.
 *
 * `deliveryCalls(() => h)` binds the calls to a file's harness, which its beforeAll
 * starts; the getter is read on every call.
 */
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import type { Harness } from "./harness.ts";
import { type Received, type Receiver, type Reply, startReceiver, waitFor } from "./receiver.ts";

export type Script = (req: Received, n: number) => Reply | Promise<Reply>;

export interface DeliveryRow {
  id: number;
  status: string;
  attempt_count: number;
  last_error_kind: string | null;
  last_status_code: number | null;
}

export interface AttemptRow {
  attempt_number: number;
  status_code: number | null;
  outcome: string;
  error_kind: string | null;
  latency_ms: number;
  response_body: string | null;
  body_bytes: number | null;
  created_at: Date;
}

export interface ScriptedReceiver extends Receiver {
  /** A fresh receiver path with an optional reply script. */
  route(script?: Script): string;
}

/** A receiver whose replies are scripted per path (default 200). */
export async function startScriptedReceiver(): Promise<ScriptedReceiver> {
  const scripts = new Map<string, Script>();
  const rx = await startReceiver((req) => {
    const script = scripts.get(req.path);
    // The request is already recorded, so its index on its path is the count minus one.
    return script ? script(req, rx.on(req.path).length - 1) : { status: 200 };
  });
  let pathCounter = 0;
  return {
    ...rx,
    route(script) {
      const path = `/hook-${++pathCounter}`;
      if (script) scripts.set(path, script);
      return path;
    },
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function deliveryCalls(get: () => Harness) {
  async function newApp(): Promise<string> {
    const res = await get().call("POST", "/api/v1/app", { name: `app-${randomUUID()}` });
    expect(res.status).toBe(201);
    return res.body.id;
  }

  async function newEndpoint(
    appId: string,
    url: string,
    policy: Record<string, unknown> = {},
  ): Promise<string> {
    const res = await get().call("POST", `/api/v1/app/${appId}/endpoint`, { url, ...policy });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id;
  }

  async function send(
    appId: string,
    payload: unknown = { hello: "world" },
    extra: Record<string, unknown> = {},
  ): Promise<string> {
    const res = await get().call("POST", `/api/v1/app/${appId}/msg`, {
      eventType: "test.event",
      payload,
      ...extra,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return res.body.id;
  }

  async function deliveryRow(msgId: string, endpointId: string): Promise<DeliveryRow | undefined> {
    const { rows } = await get().db.pool.query(
      `select id, status, attempt_count, last_error_kind, last_status_code
       from deliveries where message_id = $1 and endpoint_id = $2`,
      [msgId, endpointId],
    );
    return rows[0];
  }

  async function waitForStatus(
    msgId: string,
    endpointId: string,
    status: string,
    timeoutMs = 15_000,
  ): Promise<DeliveryRow> {
    let last: DeliveryRow | undefined;
    try {
      await waitFor(async () => {
        last = await deliveryRow(msgId, endpointId);
        return last?.status === status;
      }, timeoutMs);
    } catch {
      throw new Error(
        `delivery of ${msgId} never became ${status}; last state: ${JSON.stringify(last)}`,
      );
    }
    return last!;
  }

  async function attemptRows(msgId: string, endpointId?: string): Promise<AttemptRow[]> {
    const { rows } = await get().db.pool.query(
      `select attempt_number, status_code, outcome, error_kind, latency_ms, response_body,
              octet_length(response_body) as body_bytes, created_at
       from attempts where message_id = $1 and ($2::text is null or endpoint_id = $2)
       order by id`,
      [msgId, endpointId ?? null],
    );
    return rows;
  }

  return { newApp, newEndpoint, send, deliveryRow, waitForStatus, attemptRows };
}
