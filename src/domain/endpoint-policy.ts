/**
 * An endpoint's delivery policy, declared once: how long an attempt may take, how often
 * and how far apart it is retried, how many requests may run at once, when its circuit
 * opens and for how long, its rate limits, what it does with messages that arrive
 * while it is disabled, and how it orders them (docs/delivery.md, "Ordering"). Each field is a nullable column of `endpoints`, an integer or an
 * enumerated text; null means "the process default" (the resolved configuration's field
 * named by `default`) or, for a limit without a default, "no limit".
 *
 * Everything that spells a policy field is derived from ENDPOINT_POLICY (the generic parts
 * in domain/endpoint-policy-derived.ts): the API's JSON
 * schema and answer (api/endpoint-input.ts, api/routes/endpoints.ts), the column lists
 * (db/queries/endpoints.ts), what a PUT resets, the CLI's flags (cli/commands/endpoints.ts),
 * the dashboard's form (dashboard/endpoint-form.ts) and the effective value, in SQL
 * (`effectiveSql`) and in TypeScript (`effective`). How to add a field:
 * docs/architecture.md, "Endpoint policy".
 *
 * A leaf: it imports nothing of hookrelay but the configuration's types.
 */
import type { DeliveryDefaults, HealthConfig } from "../config.ts";

/** The process defaults policy fields fall back to, as the resolved configuration has them. */
export type PolicyDefaults = Pick<
  DeliveryDefaults,
  "timeoutMs" | "maxAttempts" | "retryBaseMs" | "retryCapMs" | "maxInFlight" | "whileDisabled"
> &
  Pick<HealthConfig, "failureThreshold" | "cooldownMs" | "adaptiveConcurrency">;

/** The process defaults of a resolved configuration. */
export function policyDefaultsOf(config: {
  delivery: DeliveryDefaults;
  health: HealthConfig;
}): PolicyDefaults {
  const { timeoutMs, maxAttempts, retryBaseMs, retryCapMs, maxInFlight, whileDisabled } =
    config.delivery;
  const { failureThreshold, cooldownMs, adaptiveConcurrency } = config.health;
  return {
    timeoutMs,
    maxAttempts,
    retryBaseMs,
    retryCapMs,
    maxInFlight,
    whileDisabled,
    failureThreshold,
    cooldownMs,
    adaptiveConcurrency,
  };
}

/** What every policy field declares, whatever its type. */
interface FieldBase {
  /** its name in the API's bodies and answers */
  readonly api: string;
  /** a second API name for the same value (Svix's): read when `api` is absent, answered beside it */
  readonly alias?: string;
  readonly column: string;
  /** what it means: the OpenAPI description, followed by what null means */
  readonly description: string;
  /** null stands for this process default (the configuration field and its variable) */
  readonly default: { readonly key: keyof PolicyDefaults; readonly env: string } | null;
  /** with no default: what null means */
  readonly nullMeans?: string;
  /** a column whose value applies while this one is null (SQL's effective value) */
  readonly fallback?: string;
  /** what a PUT that leaves it out does: back to null ("reset") or "keep" the stored value */
  readonly put: "reset" | "keep";
}

/** A nullable integer column: a duration, a count, a limit. */
export interface IntegerField extends FieldBase {
  readonly sqlType: "integer";
  /** the API's bounds (inclusive); always an integer */
  readonly min: number;
  readonly max: number;
  /** a body giving both must not set it below this field ("retryCapMs must be >= retryBaseMs") */
  readonly atLeast?: string;
  /** the `hookrelay endpoint add|update` flag; `value`: how its argument is read */
  readonly cli: {
    readonly flag: string;
    readonly value: "duration" | "int";
    readonly help: string;
  } | null;
  /** the dashboard's endpoint form field (a number input) */
  readonly form: { readonly label: string; readonly help: string; readonly unit: string } | null;
}

/** A nullable text column holding one of a few words (a check constraint in its migration). */
export interface ChoiceField extends FieldBase {
  readonly sqlType: "text";
  /** the words it may hold, as the API, the CLI and the form spell them */
  readonly values: readonly string[];
  /** the `hookrelay endpoint add|update` flag, its argument one of `values` */
  readonly cli: { readonly flag: string; readonly value: "choice"; readonly help: string } | null;
  /** the dashboard's endpoint form field (a select of `values`, or the server's default) */
  readonly form: { readonly label: string; readonly help: string } | null;
}

/** One policy field. */
export type PolicyField = IntegerField | ChoiceField;

const defaultOf = <K extends keyof PolicyDefaults, E extends string>(key: K, env: E) =>
  ({ key, env }) as const;

/** The policy fields, in the order the API answers them and the CLI lists them. */
export const ENDPOINT_POLICY = [
  {
    api: "throttleRate",
    alias: "rateLimit",
    column: "throttle_rate",
    sqlType: "integer",
    min: 1,
    max: 1_000_000,
    description: "Svix's per-second rate limit; ratePerSecond takes its place when both are set.",
    default: null,
    nullMeans: "no limit",
    put: "reset",
    cli: null,
    form: null,
  },
  {
    api: "timeoutMs",
    column: "timeout_ms",
    sqlType: "integer",
    min: 100,
    max: 300_000,
    description: "Deadline of one attempt (connect, headers and body), in milliseconds.",
    default: defaultOf("timeoutMs", "HOOKRELAY_TIMEOUT_MS"),
    put: "reset",
    cli: {
      flag: "--timeout <duration>",
      value: "duration",
      help: "deadline of one attempt (15s, 500ms)",
    },
    form: { label: "Timeout", help: "deadline of one attempt", unit: "ms" },
  },
  {
    api: "maxAttempts",
    column: "max_attempts",
    sqlType: "integer",
    min: 1,
    max: 100,
    description: "Attempts before a delivery becomes a dead letter.",
    default: defaultOf("maxAttempts", "HOOKRELAY_MAX_ATTEMPTS"),
    put: "reset",
    cli: { flag: "--max-attempts <n>", value: "int", help: "attempts before a dead letter" },
    form: { label: "Max attempts", help: "attempts before a dead letter", unit: "attempts" },
  },
  {
    api: "retryBaseMs",
    column: "retry_base_ms",
    sqlType: "integer",
    min: 0,
    max: 86_400_000,
    description:
      "Base of the retry backoff, in milliseconds: the wait after attempt n is random(0, min(retryCapMs, retryBaseMs * 2^n)).",
    default: defaultOf("retryBaseMs", "HOOKRELAY_RETRY_BASE_MS"),
    put: "reset",
    cli: { flag: "--retry-base <duration>", value: "duration", help: "base of the retry backoff" },
    form: { label: "Retry base", help: "base of the retry backoff", unit: "ms" },
  },
  {
    api: "retryCapMs",
    column: "retry_cap_ms",
    sqlType: "integer",
    min: 0,
    max: 604_800_000,
    description:
      "Longest wait between attempts, also of a Retry-After, in milliseconds; at least retryBaseMs.",
    default: defaultOf("retryCapMs", "HOOKRELAY_RETRY_CAP_MS"),
    atLeast: "retryBaseMs",
    put: "reset",
    cli: {
      flag: "--retry-cap <duration>",
      value: "duration",
      help: "longest wait between attempts",
    },
    form: { label: "Retry cap", help: "longest wait between attempts", unit: "ms" },
  },
  {
    api: "maxInFlight",
    column: "max_in_flight",
    sqlType: "integer",
    min: 1,
    max: 10_000,
    description: "Requests to the endpoint at once, across all workers.",
    default: defaultOf("maxInFlight", "HOOKRELAY_ENDPOINT_MAX_IN_FLIGHT"),
    put: "reset",
    cli: {
      flag: "--max-in-flight <n>",
      value: "int",
      help: "requests to it at once, across workers",
    },
    form: { label: "Max in flight", help: "requests to it at once", unit: "requests" },
  },
  {
    api: "failureThreshold",
    column: "failure_threshold",
    sqlType: "integer",
    min: 1,
    max: 10_000,
    description: "Failed attempts in a row that open the endpoint's circuit.",
    default: defaultOf("failureThreshold", "HOOKRELAY_FAILURE_THRESHOLD"),
    put: "reset",
    cli: {
      flag: "--failure-threshold <n>",
      value: "int",
      help: "failures in a row that open the circuit",
    },
    form: {
      label: "Failure threshold",
      help: "failures in a row that open the circuit",
      unit: "failures",
    },
  },
  {
    api: "cooldownMs",
    column: "cooldown_ms",
    sqlType: "integer",
    min: 1_000,
    max: 86_400_000,
    description:
      "First wait of an open circuit before its probe, in milliseconds; it doubles with every failed probe.",
    default: defaultOf("cooldownMs", "HOOKRELAY_COOLDOWN_MS"),
    put: "reset",
    cli: {
      flag: "--cooldown <duration>",
      value: "duration",
      help: "first wait of an open circuit",
    },
    form: { label: "Circuit cooldown", help: "first wait of an open circuit", unit: "ms" },
  },
  {
    api: "ratePerSecond",
    column: "rate_per_second",
    sqlType: "integer",
    min: 1,
    max: 1_000_000,
    description: "Most deliveries per second, across all workers.",
    default: null,
    nullMeans: "throttleRate, or no limit",
    fallback: "throttle_rate",
    put: "reset",
    cli: { flag: "--rate-per-second <n>", value: "int", help: "most deliveries per second" },
    form: { label: "Rate limit", help: "most deliveries per second", unit: "per second" },
  },
  {
    api: "ratePerMinute",
    column: "rate_per_minute",
    sqlType: "integer",
    min: 1,
    max: 60_000_000,
    description: "Most deliveries per minute, across all workers.",
    default: null,
    nullMeans: "no limit",
    put: "reset",
    cli: { flag: "--rate-per-minute <n>", value: "int", help: "most deliveries per minute" },
    form: { label: "Rate limit", help: "most deliveries per minute", unit: "per minute" },
  },
  {
    api: "ratePerHour",
    column: "rate_per_hour",
    sqlType: "integer",
    min: 1,
    max: 1_000_000_000,
    description: "Most deliveries per hour, across all workers.",
    default: null,
    nullMeans: "no limit",
    put: "reset",
    cli: { flag: "--rate-per-hour <n>", value: "int", help: "most deliveries per hour" },
    form: { label: "Rate limit", help: "most deliveries per hour", unit: "per hour" },
  },
  {
    api: "whileDisabled",
    column: "while_disabled",
    sqlType: "text",
    values: ["hold", "skip"],
    description:
      "What a message that arrives while the endpoint is disabled does for it: hold (its delivery waits, pending, and is sent when the endpoint is enabled, oldest first) or skip (its delivery is written canceled, lastErrorKind endpoint_disabled, and only replay-missing sends it).",
    default: defaultOf("whileDisabled", "HOOKRELAY_WHILE_DISABLED"),
    put: "reset",
    cli: {
      flag: "--while-disabled <hold|skip>",
      value: "choice",
      help: "messages that arrive while it is disabled: hold (sent on enable) or skip",
    },
    form: {
      label: "While disabled",
      help: "hold: sent when enabled; skip: recorded as skipped, sent only by replay-missing",
    },
  },
  {
    api: "ordering",
    column: "ordering",
    sqlType: "text",
    values: ["none", "fifo"],
    description:
      "How the endpoint orders its deliveries: none (only messages with the same orderingKey go out one at a time, in the order they were accepted) or fifo (the whole endpoint is one key: every delivery waits for the one accepted before it). Switching to fifo orders the deliveries still queued too, by acceptance.",
    default: null,
    nullMeans: "none",
    put: "reset",
    cli: {
      flag: "--ordering <none|fifo>",
      value: "choice",
      help: "fifo: the whole endpoint is delivered one at a time, in acceptance order",
    },
    form: {
      label: "Ordering",
      help: "none: only messages sharing an orderingKey are ordered; fifo: the whole endpoint is",
    },
  },
  {
    api: "orderedDeadLetter",
    column: "ordered_dead_letter",
    sqlType: "text",
    values: ["block", "skip"],
    description:
      "What a dead-lettered delivery does to the rest of its ordering key (or, for a fifo endpoint, of the endpoint): block (the key waits until an operator requeues or cancels it) or skip (the next delivery of the key goes).",
    default: null,
    nullMeans: "block",
    put: "reset",
    cli: {
      flag: "--ordered-dead-letter <block|skip>",
      value: "choice",
      help: "a dead letter of an ordered key: block the key until requeued or canceled, or skip it",
    },
    form: {
      label: "Ordered dead letter",
      help: "block: the key waits for an operator; skip: the next of the key goes",
    },
  },
  {
    api: "propagateTrace",
    column: "propagate_trace",
    sqlType: "text",
    values: ["off", "on"],
    description:
      "Whether each attempt sends the receiver a W3C traceparent header (on: the attempt's own span context, in the trace of the message's traceparent when the producer gave one; off: no header). See docs/telemetry.md.",
    default: null,
    nullMeans: "off",
    put: "reset",
    cli: {
      flag: "--propagate-trace <off|on>",
      value: "choice",
      help: "on: send the receiver a traceparent header continuing the message's trace",
    },
    form: {
      label: "Propagate trace",
      help: "on: each attempt sends a traceparent header (docs/telemetry.md)",
    },
  },
  {
    api: "adaptiveConcurrency",
    column: "adaptive_concurrency",
    sqlType: "text",
    values: ["on", "off"],
    description:
      "Whether the endpoint's in-flight limit adapts to its answers (on: it grows while they come fast and well, and shrinks on 429s, timeouts and rising latency, always within maxInFlight) or is maxInFlight alone (off).",
    default: defaultOf("adaptiveConcurrency", "HOOKRELAY_ADAPTIVE_CONCURRENCY"),
    put: "reset",
    cli: {
      flag: "--adaptive-concurrency <on|off>",
      value: "choice",
      help: "on: its in-flight limit follows its answers within max-in-flight; off: max-in-flight alone",
    },
    form: {
      label: "Adaptive concurrency",
      help: "on: the in-flight limit follows its answers, within Max in flight",
    },
  },
] as const satisfies readonly PolicyField[];

type Entry = (typeof ENDPOINT_POLICY)[number];
/** A policy field's API name. */
export type PolicyName = Entry["api"];
export type PolicyColumn = Entry["column"];
export type AliasName = Extract<Entry, { alias: string }>["alias"];
/** The fields that fall back to a process default. */
export type DefaultedName = Extract<Entry, { default: object }>["api"];
/** The integer fields' API names (bounds, `atLeast`). */
export type IntegerName = Extract<Entry, { sqlType: "integer" }>["api"];

/** A field's value: one of its words, or an integer. */
type ValueOf<E> = E extends { readonly values: readonly (infer V)[] } ? V : number;
type ByApi = { [E in Entry as E["api"]]: ValueOf<E> | null };
type ByAlias = { [E in Extract<Entry, { alias: string }> as E["alias"]]: ValueOf<E> | null };
/** A policy field's value (null: the default, or no limit). */
export type PolicyValue = ByApi[PolicyName];

/** A body's policy fields (each may be left out). */
export type PolicyIn = Partial<ByApi & ByAlias>;
/** The policy columns of an endpoints row. */
export type PolicyColumns = { [E in Entry as E["column"]]: ValueOf<E> | null };
/** The policy fields of the API's answer. */
export type PolicyOut = ByApi & ByAlias;

/** A field's declaration by its API name. */
export const fieldOf = (name: PolicyName): PolicyField =>
  ENDPOINT_POLICY.find((f) => f.api === name) as PolicyField;

/** What null means for a field, the end of its description. */
export function nullMeaning(f: PolicyField): string {
  return f.default ? `the server's default (${f.default.env})` : (f.nullMeans ?? "no limit");
}
