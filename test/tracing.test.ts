/**
 * OpenTelemetry traces end to end (docs/telemetry.md, "Traces"): a full runtime (API and
 * worker) exports over OTLP/HTTP to a receiver started here on 127.0.0.1, which decodes what
 * arrives (OTLP JSON; one case protobuf). A producer's traceparent reaches the ingest span,
 * the message row, every attempt span and, for an endpoint with propagateTrace on, the
 * receiver's request; a malformed one is ignored and counted; an OTLP endpoint that hangs or
 * refuses loses spans (counted) and every message is still delivered.
 */
import { readdir, readFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Config } from "../src/config.ts";
import { HookRelay } from "../src/library.ts";
import { silentLogger } from "../src/logger.ts";
import { type Runtime, startRuntime } from "../src/runtime.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { type TracingConfig, tracingConfigOf } from "../src/tracing-config.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { testConfig } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";
const ADMIN = "tracing-test-admin-key";
const PRODUCER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PRODUCER_SPAN = "00f067aa0ba902b7";
const PRODUCER = `00-${PRODUCER_TRACE}-${PRODUCER_SPAN}-01`;

// ------------------------------------------------------------------ the OTLP receiver

interface DecodedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: number;
  service: unknown;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
type OtlpAttributes = { key: string; value: OtlpValue }[];

const otlpValue = (v: OtlpValue) =>
  v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
const attributesOf = (list: OtlpAttributes | undefined) =>
  Object.fromEntries((list ?? []).map((a) => [a.key, otlpValue(a.value)]));

/** Decodes an OTLP/JSON export request into flat spans. */
function decodeOtlpJson(body: string): DecodedSpan[] {
  const doc = JSON.parse(body) as {
    resourceSpans: {
      resource?: { attributes?: OtlpAttributes };
      scopeSpans: {
        spans: {
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          name: string;
          kind: number;
          attributes?: OtlpAttributes;
          status?: { code?: number };
        }[];
      }[];
    }[];
  };
  return doc.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) =>
      ss.spans.map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? "",
        name: s.name,
        kind: s.kind,
        attributes: attributesOf(s.attributes),
        status: s.status?.code ?? 0,
        service: attributesOf(rs.resource?.attributes)["service.name"],
      })),
    ),
  );
}

/** OTEL_* variables as an operator would set them, through the one parser config.ts uses. */
function tracingFrom(env: Record<string, string>): TracingConfig {
  const tracing = tracingConfigOf((name) => env[name]);
  if (tracing === null) throw new Error("tracing is off for these variables");
  return tracing;
}

async function startServing(
  db: TestDb,
  tracing: TracingConfig | null,
  extra: Partial<Config> = {},
): Promise<Runtime> {
  return startRuntime(
    testConfig({
      databaseUrl: db.url,
      host: "127.0.0.1",
      port: 0,
      adminKey: ADMIN,
      dbPoolSize: 5,
      tracing,
      ...extra,
    }),
    { api: true, worker: true },
    { logger: silentLogger, redactor: makeRedactor() },
  );
}

function apiOf(runtime: Runtime) {
  return async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<{ status: number; body: Record<string, unknown> }> => {
    const res = await fetch(`${runtime.apiUrl}${V1}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN}`,
        ...(body !== undefined && { "content-type": "application/json" }),
        ...headers,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
}

async function scrapeCounter(runtime: Runtime, line: RegExp): Promise<number> {
  const text = await (await fetch(`${runtime.apiUrl}/metrics`)).text();
  const m = line.exec(text);
  return m ? Number(m[1]) : 0;
}

// ------------------------------------------------------------------------ tracing on

describe("tracing on (OTLP/JSON)", () => {
  let db: TestDb;
  let otlp: Receiver;
  let rx: Receiver;
  let runtime: Runtime;
  let api: ReturnType<typeof apiOf>;
  const spans = () => otlp.on("/v1/traces").flatMap((r) => decodeOtlpJson(r.body));

  beforeAll(async () => {
    db = await createTestDb();
    otlp = await startReceiver(() => ({ status: 200, body: "{}" }));
    rx = await startReceiver((req) => ({ status: req.path === "/fail" ? 500 : 200 }));
    runtime = await startServing(
      db,
      tracingFrom({
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_SERVICE_NAME: "hookrelay-under-test",
        OTEL_BSP_SCHEDULE_DELAY: "20",
      }),
    );
    api = apiOf(runtime);
  });
  afterAll(async () => {
    await runtime?.stop();
    await rx?.close();
    await otlp?.close();
    await db?.drop();
  });

  test("a producer's traceparent: ingest span, stored context, attempt spans, the receiver's header", async () => {
    const app = await api("POST", "/app", { name: "traced" });
    const appId = app.body.id as string;
    const propagating = await api("POST", `/app/${appId}/endpoint`, {
      url: `${rx.url}/propagating`,
      propagateTrace: "on",
    });
    expect(propagating.status).toBe(201);
    expect(propagating.body.propagateTrace).toBe("on");
    const quiet = await api("POST", `/app/${appId}/endpoint`, { url: `${rx.url}/quiet` });
    expect(quiet.body.propagateTrace).toBeNull();
    const failing = await api("POST", `/app/${appId}/endpoint`, {
      url: `${rx.url}/fail`,
      maxAttempts: 1,
    });

    const sent = await api(
      "POST",
      `/app/${appId}/msg`,
      { eventType: "order.paid", payload: { n: 1 } },
      { traceparent: PRODUCER },
    );
    expect(sent.status).toBe(202);
    const msgId = sent.body.id as string;
    await waitFor(() => rx.requests.length >= 3, 15_000, "three deliveries");

    // the ingest span continues the producer's trace
    await waitFor(() => spans().some((s) => s.name === "hookrelay.ingest"), 15_000, "ingest span");
    const ingest = spans().find((s) => s.name === "hookrelay.ingest")!;
    expect(ingest).toMatchObject({
      traceId: PRODUCER_TRACE,
      parentSpanId: PRODUCER_SPAN,
      kind: 4, // producer (OTLP's SpanKind numbering)
      service: "hookrelay-under-test",
    });
    expect(ingest.attributes).toMatchObject({
      "hookrelay.app_id": appId,
      "hookrelay.event_type": "order.paid",
      "hookrelay.message_id": msgId,
    });
    // the message keeps the ingest span's context
    const stored = await db.pool.query("select traceparent from messages where id = $1", [msgId]);
    expect(stored.rows[0].traceparent).toBe(`00-${PRODUCER_TRACE}-${ingest.spanId}-01`);

    // one attempt span per endpoint, each a child of the ingest span
    await waitFor(
      () => spans().filter((s) => s.name === "hookrelay.attempt").length >= 3,
      15_000,
      "three attempt spans",
    );
    const attempts = spans().filter((s) => s.name === "hookrelay.attempt");
    for (const a of attempts) {
      expect(a).toMatchObject({ traceId: PRODUCER_TRACE, parentSpanId: ingest.spanId, kind: 3 });
      expect(a.attributes).toMatchObject({
        "hookrelay.message_id": msgId,
        "hookrelay.attempt_number": 1,
      });
      expect(typeof a.attributes["hookrelay.latency_ms"]).toBe("number");
    }
    const byEndpoint = (id: unknown) =>
      attempts.find((a) => a.attributes["hookrelay.endpoint_id"] === id)!;
    expect(byEndpoint(propagating.body.id).attributes["http.response.status_code"]).toBe(200);
    expect(byEndpoint(propagating.body.id).status).toBe(0); // unset: fine
    const failed = byEndpoint(failing.body.id);
    expect(failed.attributes["http.response.status_code"]).toBe(500);
    expect(failed.attributes["hookrelay.error_kind"]).toEqual(expect.any(String));
    expect(failed.status).toBe(2); // error

    // the propagating endpoint got the attempt span's own context; the other got none
    const header = rx.on("/propagating")[0]!.headers.traceparent;
    expect(header).toBe(`00-${PRODUCER_TRACE}-${byEndpoint(propagating.body.id).spanId}-01`);
    expect(rx.on("/quiet")[0]!.headers.traceparent).toBeUndefined();
  });

  test("a malformed traceparent is ignored and counted: the message is accepted in a trace of its own", async () => {
    const app = await api("POST", "/app", { name: "malformed" });
    const appId = app.body.id as string;
    const before = await scrapeCounter(runtime, /^hookrelay_traceparent_malformed_total (\S+)$/m);
    const sent = await api(
      "POST",
      `/app/${appId}/msg`,
      { eventType: "order.paid", payload: {} },
      { traceparent: `00-${"0".repeat(32)}-${PRODUCER_SPAN}-01` },
    );
    expect(sent.status).toBe(202);
    const junk = await api(
      "POST",
      `/app/${appId}/msg`,
      { eventType: "order.paid", payload: {} },
      { traceparent: "not a traceparent" },
    );
    expect(junk.status).toBe(202);
    expect(await scrapeCounter(runtime, /^hookrelay_traceparent_malformed_total (\S+)$/m)).toBe(
      before + 2,
    );
    await waitFor(
      () => spans().some((s) => s.attributes["hookrelay.message_id"] === junk.body.id),
      15_000,
      "the ingest span of the message with a junk traceparent",
    );
    const ingest = spans().find((s) => s.attributes["hookrelay.message_id"] === junk.body.id)!;
    expect(ingest.parentSpanId).toBe("");
    expect(ingest.traceId).not.toBe(PRODUCER_TRACE);
  });

  test("the library's send({ traceparent }) is carried into the attempts' spans", async () => {
    const app = await api("POST", "/app", { name: "library" });
    const appId = app.body.id as string;
    const ep = await api("POST", `/app/${appId}/endpoint`, {
      url: `${rx.url}/library`,
      propagateTrace: "on",
    });
    const relay = new HookRelay({ pool: db.pool });
    const libraryTrace = "11112222333344445555666677778888";
    const { messageId } = await relay.send(appId, {
      eventType: "order.paid",
      payload: { n: 2 },
      traceparent: `00-${libraryTrace}-${PRODUCER_SPAN}-01`,
    });
    await waitFor(
      () => spans().some((s) => s.attributes["hookrelay.message_id"] === messageId),
      15_000,
      "the library message's attempt span",
    );
    const attempt = spans().find((s) => s.attributes["hookrelay.message_id"] === messageId)!;
    expect(attempt).toMatchObject({
      name: "hookrelay.attempt",
      traceId: libraryTrace,
      parentSpanId: PRODUCER_SPAN,
    });
    expect(attempt.attributes["hookrelay.endpoint_id"]).toBe(ep.body.id);
    expect(rx.on("/library")[0]!.headers.traceparent).toBe(
      `00-${libraryTrace}-${attempt.spanId}-01`,
    );
    // a malformed one is ignored by the library: the message is sent without a context
    const plain = await relay.send(appId, {
      eventType: "order.paid",
      payload: {},
      traceparent: "00-nonsense",
    });
    const row = await db.pool.query("select traceparent from messages where id = $1", [
      plain.messageId,
    ]);
    expect(row.rows[0].traceparent).toBeNull();
  });
});

// ------------------------------------------------------------------ protobuf, and off

describe("OTLP's default protocol, http/protobuf", () => {
  test("spans arrive as protobuf, carrying the producer's trace id", async () => {
    const db = await createTestDb();
    const bodies: { type: string | undefined; body: Buffer }[] = [];
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        bodies.push({ type: req.headers["content-type"], body: Buffer.concat(chunks) });
        res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const runtime = await startServing(
      db,
      tracingFrom({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${port}/custom/traces`,
        OTEL_BSP_SCHEDULE_DELAY: "20",
      }),
    );
    try {
      const api = apiOf(runtime);
      const app = await api("POST", "/app", { name: "proto" });
      await api(
        "POST",
        `/app/${app.body.id}/msg`,
        { eventType: "a.b", payload: {} },
        { traceparent: PRODUCER },
      );
      await waitFor(() => bodies.length > 0, 15_000, "a protobuf export");
      expect(bodies[0]!.type).toBe("application/x-protobuf");
      expect(bodies[0]!.body.includes(Buffer.from(PRODUCER_TRACE, "hex"))).toBe(true);
    } finally {
      await runtime.stop();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await db.drop();
    }
  });
});

describe("tracing off", () => {
  test("the SDK is never loaded: only tracing-sdk.ts (imported dynamically) and its queue import it", async () => {
    const src = new URL("../src/", import.meta.url);
    const files = (await readdir(src, { recursive: true }))
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts"))
      .sort();
    const texts = await Promise.all(files.map((f) => readFile(new URL(f, src), "utf8")));
    const importing = (what: RegExp) => files.filter((_, i) => what.test(texts[i]!));
    expect(importing(/^import[^;]*from "@opentelemetry\//m)).toEqual([
      "ops/span-queue.ts",
      "ops/tracing-sdk.ts",
    ]);
    expect(importing(/^import[^;]*from "[^"]*tracing-sdk\.ts"/m)).toEqual([]);
    expect(importing(/^import[^;]*from "[^"]*span-queue\.ts"/m)).toEqual(["ops/tracing-sdk.ts"]);
  });

  test("no spans, the producer's context stored as given, and a propagating endpoint still continues it", async () => {
    const db = await createTestDb();
    const rx = await startReceiver();
    const runtime = await startServing(db, null);
    try {
      const api = apiOf(runtime);
      const app = await api("POST", "/app", { name: "off" });
      await api("POST", `/app/${app.body.id}/endpoint`, {
        url: `${rx.url}/on`,
        propagateTrace: "on",
      });
      await api("POST", `/app/${app.body.id}/endpoint`, {
        url: `${rx.url}/off`,
        propagateTrace: "off",
      });
      const sent = await api(
        "POST",
        `/app/${app.body.id}/msg`,
        { eventType: "a.b", payload: {} },
        { traceparent: PRODUCER.toUpperCase().replace(/^00/, "00") },
      );
      await waitFor(() => rx.requests.length >= 2, 15_000, "two deliveries");
      const stored = await db.pool.query("select traceparent from messages where id = $1", [
        sent.body.id,
      ]);
      // an upper-case header is not valid (W3C: lowercase hex): ignored
      expect(stored.rows[0].traceparent).toBeNull();
      expect(rx.on("/on")[0]!.headers.traceparent).toBeUndefined();

      const second = await api(
        "POST",
        `/app/${app.body.id}/msg`,
        { eventType: "a.b", payload: {} },
        { traceparent: PRODUCER },
      );
      await waitFor(() => rx.requests.length >= 4, 15_000, "four deliveries");
      const row = await db.pool.query("select traceparent from messages where id = $1", [
        second.body.id,
      ]);
      expect(row.rows[0].traceparent).toBe(PRODUCER);
      const header = rx.on("/on")[1]!.headers.traceparent as string;
      expect(header).toMatch(new RegExp(`^00-${PRODUCER_TRACE}-[0-9a-f]{16}-01$`));
      expect(header).not.toContain(PRODUCER_SPAN);
      expect(rx.on("/off")[1]!.headers.traceparent).toBeUndefined();
    } finally {
      await runtime.stop();
      await rx.close();
      await db.drop();
    }
  });
});

// ------------------------------------------------------ an OTLP endpoint down or slow

describe.each([
  ["hangs", "hang"],
  ["refuses connections", "refuse"],
] as const)("an OTLP endpoint that %s", (_, mode) => {
  test("spans are dropped and counted; every message is delivered", async () => {
    const db = await createTestDb();
    const rx = await startReceiver();
    const otlp = await startReceiver(() => ({ hang: true }));
    const url = mode === "hang" ? otlp.url : "http://127.0.0.1:9";
    const runtime = await startServing(
      db,
      tracingFrom({
        OTEL_EXPORTER_OTLP_ENDPOINT: url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_BSP_MAX_QUEUE_SIZE: "4",
        OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "2",
        OTEL_BSP_SCHEDULE_DELAY: "10",
        OTEL_EXPORTER_OTLP_TIMEOUT: "300",
      }),
    );
    try {
      const api = apiOf(runtime);
      const app = await api("POST", "/app", { name: "otlp-down" });
      await api("POST", `/app/${app.body.id}/endpoint`, { url: `${rx.url}/ok` });
      const messages = 24;
      for (let i = 0; i < messages; i++) {
        const sent = await api("POST", `/app/${app.body.id}/msg`, {
          eventType: "a.b",
          payload: { i },
        });
        expect(sent.status).toBe(202);
      }
      await waitFor(() => rx.requests.length === messages, 15_000, "every delivery");
      const dropped = (reason: string) =>
        scrapeCounter(
          runtime,
          new RegExp(`^hookrelay_trace_spans_dropped_total\\{reason="${reason}"\\} (\\S+)$`, "m"),
        );
      // 48 spans (an ingest and an attempt per message), a queue of 4, and one export at a
      // time held for its whole timeout: most spans never wait. (A refused export fails at
      // once, so that queue drains and may never fill.)
      if (mode === "hang") expect(await dropped("queue_full")).toBeGreaterThan(0);
      await waitFor(async () => (await dropped("export_failed")) > 0, 15_000, "a failed export");
      expect(await scrapeCounter(runtime, /^hookrelay_trace_spans_exported_total (\S+)$/m)).toBe(0);
    } finally {
      await runtime.stop();
      await otlp.close();
      await rx.close();
      await db.drop();
    }
  });
});
