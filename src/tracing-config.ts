/**
 * OpenTelemetry tracing settings from the standard OTEL_* variables (docs/telemetry.md,
 * "Traces"), resolved once. config.ts reads the environment and hands this module its
 * reader, so variables are still read in one place. Tracing is on only when an OTLP endpoint
 * is given and neither OTEL_SDK_DISABLED nor OTEL_TRACES_EXPORTER=none turns it off.
 */
import { ConfigError } from "./errors.ts";

/** How traces are sampled (OTEL_TRACES_SAMPLER). */
export type SamplerKind =
  | "always_on"
  | "always_off"
  | "traceidratio"
  | "parentbased_always_on"
  | "parentbased_always_off"
  | "parentbased_traceidratio";

export interface TracingConfig {
  /** url: where spans are POSTed (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces) */
  url: string;
  /** protocol: http/protobuf (the default) or http/json */
  protocol: "http/protobuf" | "http/json";
  /** headers sent with every export (OTEL_EXPORTER_OTLP_[TRACES_]HEADERS: k=v,k2=v2) */
  headers: Record<string, string>;
  /** exportTimeoutMs: one export's deadline (OTEL_EXPORTER_OTLP_[TRACES_]TIMEOUT). Default 10_000. */
  exportTimeoutMs: number;
  /** serviceName: the resource's service.name (OTEL_SERVICE_NAME). Default "hookrelay". */
  serviceName: string;
  /** more resource attributes (OTEL_RESOURCE_ATTRIBUTES: k=v,k2=v2) */
  resourceAttributes: Record<string, string>;
  sampler: SamplerKind;
  /** ratio: the traceidratio samplers' argument, 0-1 (OTEL_TRACES_SAMPLER_ARG). Default 1. */
  ratio: number;
  /** maxQueueSize: ended spans waiting for export; more are dropped (OTEL_BSP_MAX_QUEUE_SIZE). Default 2_048. */
  maxQueueSize: number;
  /** maxExportBatchSize: spans per export (OTEL_BSP_MAX_EXPORT_BATCH_SIZE). Default 512. */
  maxExportBatchSize: number;
  /** scheduleDelayMs: the longest a span waits for its export to start (OTEL_BSP_SCHEDULE_DELAY). Default 5_000. */
  scheduleDelayMs: number;
}

const SAMPLERS: readonly SamplerKind[] = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio",
];

/** `k=v,k2=v2` with percent-encoded values (the OTEL list format); a bad entry is an error. */
function keyValues(name: string, raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of (raw ?? "").split(",")) {
    if (entry.trim() === "") continue;
    const eq = entry.indexOf("=");
    const key = entry.slice(0, eq).trim();
    if (eq <= 0 || key === "") throw new ConfigError(`${name}: "${entry}" is not key=value`);
    try {
      out[key] = decodeURIComponent(entry.slice(eq + 1).trim());
    } catch (err) {
      throw new ConfigError(`${name}: "${entry}" is not percent-encoded`, { cause: err });
    }
  }
  return out;
}

function positiveInt(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new ConfigError(`${name} must be a positive integer`);
  return n;
}

function httpUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (err) {
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`, { cause: err });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new ConfigError(`${name} must be an http(s) URL, got "${raw}"`);
  return url.href;
}

/** The tracing settings, or null when tracing is off. `read`: the environment's reader. */
export function tracingConfigOf(read: (name: string) => string | undefined): TracingConfig | null {
  if (read("OTEL_SDK_DISABLED")?.trim().toLowerCase() === "true") return null;
  const exporter = read("OTEL_TRACES_EXPORTER")?.trim().toLowerCase() ?? "otlp";
  if (exporter === "none") return null;
  if (exporter !== "otlp")
    throw new ConfigError(
      `OTEL_TRACES_EXPORTER: only otlp (or none) is supported, got "${exporter}"`,
    );
  const traces = read("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  const base = read("OTEL_EXPORTER_OTLP_ENDPOINT");
  let url: string;
  if (traces) url = httpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces);
  else if (base)
    url = httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", `${base.replace(/\/+$/, "")}/v1/traces`);
  else return null;
  const protocol =
    read("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") ??
    read("OTEL_EXPORTER_OTLP_PROTOCOL") ??
    "http/protobuf";
  if (protocol !== "http/protobuf" && protocol !== "http/json")
    throw new ConfigError(
      `OTEL_EXPORTER_OTLP_PROTOCOL: http/protobuf or http/json (grpc is not supported), got "${protocol}"`,
    );
  const sampler = (read("OTEL_TRACES_SAMPLER")?.trim() || "parentbased_always_on") as SamplerKind;
  if (!SAMPLERS.includes(sampler))
    throw new ConfigError(
      `OTEL_TRACES_SAMPLER must be one of ${SAMPLERS.join(", ")}, got "${sampler}"`,
    );
  const arg = read("OTEL_TRACES_SAMPLER_ARG");
  const ratio = arg === undefined || arg.trim() === "" ? 1 : Number(arg);
  if (sampler.endsWith("traceidratio") && !(ratio >= 0 && ratio <= 1))
    throw new ConfigError(`OTEL_TRACES_SAMPLER_ARG must be a number from 0 to 1, got "${arg}"`);
  const maxQueueSize = positiveInt(
    "OTEL_BSP_MAX_QUEUE_SIZE",
    read("OTEL_BSP_MAX_QUEUE_SIZE"),
    2_048,
  );
  const resourceAttributes = keyValues(
    "OTEL_RESOURCE_ATTRIBUTES",
    read("OTEL_RESOURCE_ATTRIBUTES"),
  );
  return {
    url,
    protocol,
    headers: {
      ...keyValues("OTEL_EXPORTER_OTLP_HEADERS", read("OTEL_EXPORTER_OTLP_HEADERS")),
      ...keyValues("OTEL_EXPORTER_OTLP_TRACES_HEADERS", read("OTEL_EXPORTER_OTLP_TRACES_HEADERS")),
    },
    exportTimeoutMs: positiveInt(
      "OTEL_EXPORTER_OTLP_TIMEOUT",
      read("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") ?? read("OTEL_EXPORTER_OTLP_TIMEOUT"),
      10_000,
    ),
    serviceName:
      read("OTEL_SERVICE_NAME")?.trim() || resourceAttributes["service.name"] || "hookrelay",
    resourceAttributes,
    sampler,
    ratio,
    maxQueueSize,
    maxExportBatchSize: Math.min(
      maxQueueSize,
      positiveInt("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", read("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"), 512),
    ),
    scheduleDelayMs: positiveInt("OTEL_BSP_SCHEDULE_DELAY", read("OTEL_BSP_SCHEDULE_DELAY"), 5_000),
  };
}
