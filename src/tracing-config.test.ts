import { expect, test } from "vitest";
import { tracingConfigOf } from "./tracing-config.ts";

const read = (env: Record<string, string>) => (name: string) => env[name];

test("off without an endpoint, with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none", () => {
  expect(tracingConfigOf(read({}))).toBeNull();
  const url = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" };
  expect(tracingConfigOf(read({ ...url, OTEL_SDK_DISABLED: "true" }))).toBeNull();
  expect(tracingConfigOf(read({ ...url, OTEL_TRACES_EXPORTER: "none" }))).toBeNull();
});

test("the standard variables and their defaults", () => {
  expect(tracingConfigOf(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }))).toEqual({
    url: "http://collector:4318/v1/traces",
    protocol: "http/protobuf",
    headers: {},
    exportTimeoutMs: 10_000,
    serviceName: "hookrelay",
    resourceAttributes: {},
    sampler: "parentbased_always_on",
    ratio: 1,
    maxQueueSize: 2_048,
    maxExportBatchSize: 512,
    scheduleDelayMs: 5_000,
  });
  const c = tracingConfigOf(
    read({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://ignored:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://collector.example/traces",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "api-key=a%20b,x=1",
      OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x=2",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=prod",
      OTEL_SERVICE_NAME: "relay-eu",
      OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
      OTEL_TRACES_SAMPLER_ARG: "0.25",
      OTEL_BSP_MAX_QUEUE_SIZE: "100",
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: "500",
    }),
  );
  expect(c).toMatchObject({
    url: "https://collector.example/traces",
    protocol: "http/json",
    headers: { "api-key": "a b", x: "2" },
    serviceName: "relay-eu",
    resourceAttributes: { "deployment.environment": "prod" },
    sampler: "parentbased_traceidratio",
    ratio: 0.25,
    maxQueueSize: 100,
    // never more than the queue holds
    maxExportBatchSize: 100,
  });
});

test.each([
  [{ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }, /grpc is not supported/],
  [{ OTEL_TRACES_EXPORTER: "zipkin" }, /only otlp/],
  [{ OTEL_TRACES_SAMPLER: "sometimes" }, /OTEL_TRACES_SAMPLER must be one of/],
  [{ OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "2" }, /from 0 to 1/],
  [{ OTEL_BSP_MAX_QUEUE_SIZE: "0" }, /positive integer/],
  [{ OTEL_EXPORTER_OTLP_HEADERS: "novalue" }, /is not key=value/],
  [{ OTEL_EXPORTER_OTLP_ENDPOINT: "ftp://x" }, /http\(s\) URL/],
])("bad settings stop the start: %o", (env, message) => {
  expect(() =>
    tracingConfigOf(read({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318", ...env })),
  ).toThrow(message);
});
