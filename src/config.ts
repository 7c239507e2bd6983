/**
 * Configuration, resolved once. This is the only module that reads environment variables;
 * everything else receives a `Config` (or a slice of it). Every field says its unit and
 * default; README.md carries the same table.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { schemaNameOf } from "./db/schema-name.ts";
import { type DbTlsSettings, withTlsParams } from "./db/tls-params.ts";
import { ConfigError } from "./errors.ts";
import { DEFAULT_SENSITIVE_FIELDS } from "./security/redact.ts";
import { type TracingConfig, tracingConfigOf } from "./tracing-config.ts";

export interface DeliveryDefaults {
  /** timeoutMs: absolute deadline of one attempt (connect, headers, body). Default 15_000. */
  timeoutMs: number;
  /** maxAttempts: attempts before a delivery is dead-lettered. Default 5. */
  maxAttempts: number;
  /** retryBaseMs: full-jitter base; delay after attempt n is random(0, min(cap, base * 2^n)). Default 30_000. */
  retryBaseMs: number;
  /** retryCapMs: upper bound of any retry delay, also of Retry-After. Default 3_600_000. */
  retryCapMs: number;
  /** maxInFlight: concurrent requests to one endpoint across the claim. Default 20. */
  maxInFlight: number;
  /**
   * whileDisabled: a message that arrives while an endpoint is disabled is held for it
   * (pending, sent when it is enabled) or skipped (canceled, `endpoint_disabled`), unless
   * the endpoint says otherwise (docs/delivery.md, "While an endpoint is disabled").
   * Default "hold".
   */
  whileDisabled: WhileDisabled;
}

/** A switch: "on" or "off". */
export type OnOff = "on" | "off";

/** What a disabled endpoint does with a message that arrives (see `whileDisabled`). */
export type WhileDisabled = "hold" | "skip";

export interface HealthConfig {
  /** failureThreshold: consecutive failed attempts that open the circuit. Default 10. */
  failureThreshold: number;
  /** cooldownMs: first cooldown of an open circuit. Default 300_000. */
  cooldownMs: number;
  /** cooldownCapMs: the cooldown doubles on every failed probe up to this. Default 3_600_000. */
  cooldownCapMs: number;
  /** slowP95Ms: an endpoint with a higher p95 is reported slow. Default 2_000. */
  slowP95Ms: number;
  /** verySlowP95Ms: above this p95 the lowered threshold applies. Default 5_000. */
  verySlowP95Ms: number;
  /** verySlowFailureThreshold: the lowered threshold. Default 3. */
  verySlowFailureThreshold: number;
  /** minSamples: fewer samples than this never make an endpoint slow. Default 20. */
  minSamples: number;
  /** windowMs: the rolling latency window. Default 24 h. */
  windowMs: number;
  /** statsIntervalMs: how often maintenance refreshes the percentiles. Default 60_000. */
  statsIntervalMs: number;
  /**
   * adaptiveConcurrency: "on": each endpoint's in-flight limit follows its answers within
   * its maxInFlight (docs/adaptive-concurrency.md); "off": maxInFlight alone (and the
   * gradual resume after a pause). Endpoints may say otherwise. Default "on".
   */
  adaptiveConcurrency: OnOff;
}

export interface RetentionConfig {
  /** payloadMs: fully delivered messages (payload, deliveries) are deleted after this. Default 30 days. */
  payloadMs: number;
  /** attemptsMs: attempt history is deleted after this. Default 30 days. */
  attemptsMs: number;
  /** deadLetterMs: dead letters not requeued are deleted after this. Default 30 days. */
  deadLetterMs: number;
  /** batch: rows per delete statement, so no purge holds locks for long. Default 2_000. */
  batch: number;
}

/** The attempts table's time partitions (docs/history.md). */
export interface PartitionConfig {
  /** interval: one partition per "day" (UTC) or per "hour". HOOKRELAY_PARTITION_INTERVAL, default day. */
  interval: "day" | "hour";
  /** aheadMs: partitions exist this far past now. HOOKRELAY_PARTITIONS_AHEAD_MS, default 2 days. */
  aheadMs: number;
}

export interface AlertConfig {
  /** deadLetterWindowMs: dead letters "grow" when this window holds more than the one before. Default 15 min. */
  deadLetterWindowMs: number;
  /** deadLetterMin: ... and at least this many. Default 10. */
  deadLetterMin: number;
  /** oldestPendingMs: alert when a delivery has waited longer. Default 30 min. */
  oldestPendingMs: number;
  /** webhookUrl: new and resolved alerts are delivered here (signed, through the queue). */
  webhookUrl: string | undefined;
}

export interface WorkerConfig {
  /** concurrency: requests in flight per worker process. Default 1024. */
  concurrency: number;
  /** claimBatch: most rows taken by one claim statement. Default 256. */
  claimBatch: number;
  /** pollIntervalMs: idle poll when no NOTIFY arrives. Default 1_000. */
  pollIntervalMs: number;
  /** leaseMarginMs: lease = endpoint timeout + this. Default 30_000. */
  leaseMarginMs: number;
  /** flushIntervalMs: results are written back at least this often. Default 20. */
  flushIntervalMs: number;
  /** flushBatch: results written back as soon as this many are waiting. Default 256. */
  flushBatch: number;
  /** shutdownTimeoutMs: how long SIGTERM waits for in-flight requests. Default 30_000. */
  shutdownTimeoutMs: number;
  /** maintenanceIntervalMs: how often the maintenance runner wakes. Default 60_000. */
  maintenanceIntervalMs: number;
  /**
   * heartbeatStaleMs: a worker without a session of its own (behind a transaction pooler,
   * no direct URL) is taken as gone, and its claims handed back, once its heartbeat row is
   * this old; it beats every fifth of it (docs/database.md). Default 10_000.
   */
  heartbeatStaleMs: number;
  /**
   * livenessJudgeAfterMs: a worker judges other workers' liveness (hands back the claims
   * of one that is gone) only once its own has held this long, so that after a database
   * restart none judges another still on its way back (docs/worker-liveness.md). Default
   * 3_000.
   */
  livenessJudgeAfterMs: number;
  /**
   * pooledPollIntervalMs: the idle poll when no LISTEN connection can be had (a
   * transaction pooler and no direct URL), if shorter than pollIntervalMs. Default 250.
   */
  pooledPollIntervalMs: number;
  /**
   * replayRatePerSecond: the pace of a background replay (recover, replay-missing, bulk
   * replay) whose caller set none, for an endpoint without a rate limit of its own
   * (docs/recovery.md). Default 50.
   */
  replayRatePerSecond: number;
}

/** One named egress pool (docs/egress.md): how its traffic leaves, and from which IPs. */
export interface EgressPool {
  /** proxy: an http://, https:// or socks5:// proxy URL every request of the pool goes through, or null */
  proxy: string | null;
  /** localAddress: the local source address its connections bind to, or null */
  localAddress: string | null;
  /** publicIps: the addresses receivers see, as the operator declares them (GET /api/v1/egress) */
  publicIps: string[];
  /** description: shown beside the pool's IPs. Default "". */
  description: string;
}

/** Egress (docs/egress.md): the process-wide proxy and the named pools. */
export interface EgressConfig {
  /** proxy: every request without a pool or proxy of its own goes through it; null = direct. Default null. */
  proxy: string | null;
  /** pools: by name; endpoints and applications select one. Default none. */
  pools: Record<string, EgressPool>;
}

export interface Config {
  /** databaseUrl: external PostgreSQL; undefined = embedded PostgreSQL in dataDir. */
  databaseUrl: string | undefined;
  /** dataDir: embedded database and local state. Default ./.hookrelay */
  dataDir: string;
  /** embeddedPgPort: port of the embedded PostgreSQL; 0 = pick a free one. Default 0. */
  embeddedPgPort: number;
  host: string;
  port: number;
  /** adminKey: accepted as an admin API key in addition to the stored ones. */
  adminKey: string | undefined;
  ssrfAllowlist: string[];
  /** encryptionKey: seals signing secrets at rest (32 bytes, base64 or hex). */
  encryptionKey: string | undefined;
  /** encryptionKeyPrevious: older keys, still accepted for opening while re-encrypting. */
  encryptionKeyPrevious: string[];
  logLevel: string;
  /** sensitiveFields: field names whose values are masked in logs, errors and listings. */
  sensitiveFields: string[];
  /**
   * databaseDirectUrl: a URL reaching PostgreSQL itself when databaseUrl is a transaction
   * pooler; the session-bound parts (LISTEN, worker liveness, the maintenance lock) use it
   * (docs/database.md). Unset: those parts work without a session of their own.
   */
  databaseDirectUrl: string | undefined;
  /** dbPooler: what databaseUrl reaches: auto = detected at start, none, transaction. Default auto. */
  dbPooler: "auto" | "none" | "transaction";
  /** dbPoolSize: connections per process. Default 10. */
  dbPoolSize: number;
  /**
   * dbStartupWaitMs: how long a starting process waits for an unreachable database (one
   * restarting, failing over, or started at the same moment) before it gives up. Default 60_000.
   */
  dbStartupWaitMs: number;
  /**
   * dbSchema: the schema of hookrelay's tables; the role's search_path must lead to it
   * (checked at start; docs/database.md, "Roles and schema"). Unset: the role's current
   * schema (usually public).
   */
  dbSchema: string | undefined;
  /**
   * migrationDatabaseUrl: the URL of a role that owns the schema, for `hookrelay migrate`
   * and for a starting server that finds the schema behind. Unset: databaseUrl.
   */
  migrationDatabaseUrl: string | undefined;
  /** migrateOnStart: auto = a starting server migrates a schema that is behind; skip = it refuses to start. Default auto. */
  migrateOnStart: "auto" | "skip";
  /** bodyLimitBytes: largest accepted API request body. Default 1 MiB. */
  bodyLimitBytes: number;
  /** idempotencyTtlMs: how long an idempotency-key's response is replayed. Default 24 h. */
  idempotencyTtlMs: number;
  /** apiRateLimitPerSecond: requests per second per API key and process (burst 2x); 0 = off. Default 10_000. */
  apiRateLimitPerSecond: number;
  /** metricsToken: if set, /metrics requires `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** metricsPort: a worker-only process serves /metrics on this port (0 = none). */
  metricsPort: number;
  /** metricsMaxEndpoints: endpoints with their own latency-histogram label. Default 100. */
  metricsMaxEndpoints: number;
  /**
   * tracing: OpenTelemetry traces over OTLP/HTTP, from the standard OTEL_* variables
   * (tracing-config.ts, docs/telemetry.md); null (the default): off, and the SDK is not loaded.
   */
  tracing: TracingConfig | null;
  /** metricsMaxApps: applications with their own `app` label on the delivery counters. Default 20. */
  metricsMaxApps: number;
  /** dashboardSessionTtlMs: how long a dashboard sign-in lasts. Default 8 h. */
  dashboardSessionTtlMs: number;
  /**
   * operationalWebhookUrl: Svix-shaped operational events (docs/operational-webhooks.md) are
   * delivered here, signed, through the queue. Unset: none are raised.
   */
  operationalWebhookUrl: string | undefined;
  /**
   * publicUrl: the origin browsers reach this API at (scheme, host, port), for the portal
   * links it issues; an https one also makes the portal's cookies Secure.
   * Default: the scheme and Host of the request that asked for the link.
   */
  publicUrl: string | undefined;
  /**
   * portalFrameAncestors: CSP frame-ancestors sources allowed to embed the portal in an
   * iframe (docs/portal.md), e.g. ["https://app.example.com"]. Default ["'self'"].
   */
  portalFrameAncestors: string[];
  delivery: DeliveryDefaults;
  /** egress: HOOKRELAY_EGRESS_PROXY and HOOKRELAY_EGRESS_POOLS (docs/egress.md) */
  egress: EgressConfig;
  health: HealthConfig;
  alerts: AlertConfig;
  retention: RetentionConfig;
  partitions: PartitionConfig;
  worker: WorkerConfig;
}

type Env = Record<string, string | undefined>;

const envString = (env: Env, name: string): string | undefined => {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
};
/**
 * HOOKRELAY_DB_SSLMODE, _SSLROOTCERT, _SSLCERT, _SSLKEY, _SSLPASSWORD: TLS to PostgreSQL
 * (docs/database.md, "TLS"). They are written into every database URL, each overriding the
 * URL's parameter of the same name, so that every connection reads TLS the same way.
 */
function dbTlsOf(env: Env): DbTlsSettings {
  return {
    sslmode: envString(env, "HOOKRELAY_DB_SSLMODE"),
    sslrootcert: envString(env, "HOOKRELAY_DB_SSLROOTCERT"),
    sslcert: envString(env, "HOOKRELAY_DB_SSLCERT"),
    sslkey: envString(env, "HOOKRELAY_DB_SSLKEY"),
    sslpassword: envString(env, "HOOKRELAY_DB_SSLPASSWORD"),
  };
}
const withDbTls = (env: Env, url: string | undefined) => url && withTlsParams(url, dbTlsOf(env));

const dataDirOf = (env: Env) => path.resolve(envString(env, "HOOKRELAY_DATA_DIR") ?? ".hookrelay");

/**
 * What the operator commands of the CLI read: where the server is, never how it behaves.
 * Thresholds, the SSRF allowlist and every other setting are the server's (docs/cli.md).
 */
export interface ClientConfig {
  /** serverUrl: HOOKRELAY_URL, the API to talk to; default: the local one in dataDir/cli.json */
  serverUrl: string | undefined;
  /** apiKey: HOOKRELAY_KEY, sent as the bearer key */
  apiKey: string | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  /** metricsToken: HOOKRELAY_METRICS_TOKEN, what `hookrelay metrics` sends to /metrics */
  metricsToken: string | undefined;
}

export function loadClientConfig(env: Env = process.env): ClientConfig {
  return {
    serverUrl: envString(env, "HOOKRELAY_URL"),
    apiKey: envString(env, "HOOKRELAY_KEY"),
    dataDir: dataDirOf(env),
    databaseUrl: withDbTls(env, envString(env, "DATABASE_URL")),
    metricsToken: envString(env, "HOOKRELAY_METRICS_TOKEN"),
  };
}

/** Explicit settings (CLI flags, tests) that take precedence over the environment. */
export type ConfigOverrides = Partial<
  Omit<Config, "delivery" | "health" | "alerts" | "retention" | "worker">
> & {
  retention?: Partial<RetentionConfig>;
  delivery?: Partial<DeliveryDefaults>;
  health?: Partial<HealthConfig>;
  alerts?: Partial<AlertConfig>;
  worker?: Partial<WorkerConfig>;
};

/** HOOKRELAY_PUBLIC_URL: an http(s) origin (no path: the portal is served at /portal). */
function publicUrlOf(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`HOOKRELAY_PUBLIC_URL must be a URL, got "${raw}"`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.href !== `${url.origin}/`)
    throw new ConfigError(
      `HOOKRELAY_PUBLIC_URL must be an http(s) origin such as https://hooks.example.com, got "${raw}"`,
    );
  return url.origin;
}

// One CSP source expression: a keyword, a scheme, or an origin with an optional wildcard
// subdomain and port. Nothing that could end the directive (";", ",", spaces, quotes).
const FRAME_SOURCE = /^('self'|'none'|https?:|https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:(\d{1,5}|\*))?)$/;

/** HOOKRELAY_PORTAL_FRAME_ANCESTORS: space- or comma-separated CSP sources. */
function frameAncestorsOf(raw: string | undefined): string[] {
  if (raw === undefined) return ["'self'"];
  const sources = raw.split(/[\s,]+/).filter(Boolean);
  for (const s of sources) {
    if (!FRAME_SOURCE.test(s))
      throw new ConfigError(
        `HOOKRELAY_PORTAL_FRAME_ANCESTORS: "${s}" is not a frame-ancestors source ('self', 'none', https:, or an origin such as https://app.example.com)`,
      );
  }
  if (sources.includes("'none'") && sources.length > 1)
    throw new ConfigError(
      "HOOKRELAY_PORTAL_FRAME_ANCESTORS: 'none' cannot be combined with other sources",
    );
  return sources;
}

const PROXY_SCHEMES = new Set(["http:", "https:", "socks5:"]);

/** A proxy URL of the operator's, checked for its scheme and host; `name` is the setting. */
function proxyUrlOf(raw: string, name: string): string {
  let url: URL | null = null;
  try {
    url = new URL(raw);
  } catch {}
  if (url === null || !PROXY_SCHEMES.has(url.protocol) || url.hostname === "")
    throw new ConfigError(`${name} must be an http://, https:// or socks5:// URL with a host`);
  return raw;
}

export const EGRESS_POOL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * HOOKRELAY_EGRESS_POOLS: a JSON object (or the path of a file holding one) of pool name ->
 * { proxy?, localAddress?, publicIps?, description? } (docs/egress.md).
 */
function egressPoolsOf(raw: string | undefined): Record<string, EgressPool> {
  if (raw === undefined) return {};
  const name = "HOOKRELAY_EGRESS_POOLS";
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.startsWith("{") ? raw : readFileSync(raw, "utf8"));
  } catch (cause) {
    throw new ConfigError(`${name} is neither a JSON object nor a readable JSON file`, { cause });
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw new ConfigError(`${name} must be a JSON object of pool name -> pool`);
  const pools: Record<string, EgressPool> = {};
  for (const [pool, value] of Object.entries(parsed)) {
    const where = `${name}: pool ${JSON.stringify(pool)}`;
    if (!EGRESS_POOL_NAME.test(pool))
      throw new ConfigError(`${where}: a name is 1-64 letters, digits, '.', '_' or '-'`);
    const v = value as Record<string, unknown>;
    if (typeof v !== "object" || v === null) throw new ConfigError(`${where} must be an object`);
    const unknown = Object.keys(v).find(
      (k) => !["proxy", "localAddress", "publicIps", "description"].includes(k),
    );
    if (unknown) throw new ConfigError(`${where} has an unknown field ${JSON.stringify(unknown)}`);
    const text = (k: string) => {
      if (v[k] === undefined || v[k] === null) return null;
      if (typeof v[k] !== "string") throw new ConfigError(`${where}: ${k} must be a string`);
      return v[k] as string;
    };
    const ips = v.publicIps ?? [];
    if (!Array.isArray(ips) || ips.some((ip) => typeof ip !== "string"))
      throw new ConfigError(`${where}: publicIps must be an array of strings`);
    const proxy = text("proxy");
    pools[pool] = {
      proxy: proxy === null ? null : proxyUrlOf(proxy, `${where}: proxy`),
      localAddress: text("localAddress"),
      publicIps: ips as string[],
      description: text("description") ?? "",
    };
  }
  return pools;
}

/** HOOKRELAY_DB_POOLER: auto, none or transaction (docs/database.md). */
function poolerOf(raw: string | undefined): Config["dbPooler"] {
  if (raw === undefined) return "auto";
  if (raw === "auto" || raw === "none" || raw === "transaction") return raw;
  throw new ConfigError(`HOOKRELAY_DB_POOLER must be auto, none or transaction, got "${raw}"`);
}

/** HOOKRELAY_MIGRATE: auto or skip (docs/database.md, "Roles and schema"). */
function migrateModeOf(raw: string | undefined): Config["migrateOnStart"] {
  if (raw === undefined || raw === "auto" || raw === "skip") return raw ?? "auto";
  throw new ConfigError(`HOOKRELAY_MIGRATE must be auto or skip, got "${raw}"`);
}

/** HOOKRELAY_ADAPTIVE_CONCURRENCY: on or off (docs/adaptive-concurrency.md). */
function adaptiveConcurrencyOf(raw: string | undefined): OnOff {
  if (raw === undefined || raw === "on" || raw === "off") return raw ?? "on";
  throw new ConfigError(`HOOKRELAY_ADAPTIVE_CONCURRENCY must be on or off, got "${raw}"`);
}

/** HOOKRELAY_WHILE_DISABLED: hold or skip (docs/delivery.md, "While an endpoint is disabled"). */
function partitionIntervalOf(raw: string | undefined): PartitionConfig["interval"] {
  const value = raw?.trim() || "day";
  if (value === "day" || value === "hour") return value;
  throw new ConfigError(`HOOKRELAY_PARTITION_INTERVAL must be day or hour, got "${raw}"`);
}

function whileDisabledOf(raw: string | undefined): WhileDisabled {
  if (raw === undefined || raw === "hold" || raw === "skip") return raw ?? "hold";
  throw new ConfigError(`HOOKRELAY_WHILE_DISABLED must be hold or skip, got "${raw}"`);
}

/** Builds the configuration from environment variables, then applies explicit overrides. */
export function loadConfig(env: Env = process.env, overrides: ConfigOverrides = {}): Config {
  const int = (name: string, fallback: number, min = 0): number => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === "") return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min) {
      throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
    }
    return value;
  };
  const str = (name: string) => envString(env, name);

  const config: Config = {
    databaseUrl: str("DATABASE_URL"),
    dataDir: dataDirOf(env),
    embeddedPgPort: int("HOOKRELAY_EMBEDDED_PG_PORT", 0),
    host: str("HOOKRELAY_HOST") ?? "127.0.0.1",
    port: int("HOOKRELAY_PORT", 8787),
    adminKey: str("HOOKRELAY_ADMIN_KEY"),
    ssrfAllowlist: (str("HOOKRELAY_SSRF_ALLOWLIST") ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    encryptionKey: str("HOOKRELAY_ENCRYPTION_KEY"),
    encryptionKeyPrevious: (str("HOOKRELAY_ENCRYPTION_KEY_PREVIOUS") ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    logLevel: str("HOOKRELAY_LOG_LEVEL") ?? "info",
    sensitiveFields: str("HOOKRELAY_SENSITIVE_FIELDS")
      ?.split(",")
      .map((s) => s.trim())
      .filter(Boolean) ?? [...DEFAULT_SENSITIVE_FIELDS],
    databaseDirectUrl: str("HOOKRELAY_DATABASE_DIRECT_URL"),
    dbPooler: poolerOf(str("HOOKRELAY_DB_POOLER")),
    dbPoolSize: int("HOOKRELAY_DB_POOL_SIZE", 10, 2),
    dbStartupWaitMs: int("HOOKRELAY_DB_STARTUP_WAIT_MS", 60_000, 0),
    dbSchema: schemaNameOf(str("HOOKRELAY_DB_SCHEMA"), "HOOKRELAY_DB_SCHEMA"),
    migrationDatabaseUrl: str("HOOKRELAY_MIGRATION_DATABASE_URL"),
    migrateOnStart: migrateModeOf(str("HOOKRELAY_MIGRATE")),
    bodyLimitBytes: int("HOOKRELAY_BODY_LIMIT_BYTES", 1024 * 1024, 1024),
    idempotencyTtlMs: int("HOOKRELAY_IDEMPOTENCY_TTL_MS", 24 * 3600_000, 1),
    apiRateLimitPerSecond: int("HOOKRELAY_API_RATE_LIMIT", 10_000, 0),
    metricsToken: str("HOOKRELAY_METRICS_TOKEN"),
    metricsPort: int("HOOKRELAY_METRICS_PORT", 0),
    metricsMaxEndpoints: int("HOOKRELAY_METRICS_MAX_ENDPOINTS", 100, 0),
    metricsMaxApps: int("HOOKRELAY_METRICS_MAX_APPS", 20, 0),
    tracing: tracingConfigOf(str),
    dashboardSessionTtlMs: int("HOOKRELAY_DASHBOARD_SESSION_TTL_MS", 8 * 3_600_000, 60_000),
    operationalWebhookUrl: str("HOOKRELAY_OPERATIONAL_WEBHOOK_URL"),
    publicUrl: publicUrlOf(str("HOOKRELAY_PUBLIC_URL")),
    portalFrameAncestors: frameAncestorsOf(str("HOOKRELAY_PORTAL_FRAME_ANCESTORS")),
    delivery: {
      timeoutMs: int("HOOKRELAY_TIMEOUT_MS", 15_000, 1),
      maxAttempts: int("HOOKRELAY_MAX_ATTEMPTS", 5, 1),
      retryBaseMs: int("HOOKRELAY_RETRY_BASE_MS", 30_000, 0),
      retryCapMs: int("HOOKRELAY_RETRY_CAP_MS", 3_600_000, 0),
      maxInFlight: int("HOOKRELAY_ENDPOINT_MAX_IN_FLIGHT", 20, 1),
      whileDisabled: whileDisabledOf(str("HOOKRELAY_WHILE_DISABLED")),
    },
    egress: {
      proxy: ((raw) => (raw === undefined ? null : proxyUrlOf(raw, "HOOKRELAY_EGRESS_PROXY")))(
        str("HOOKRELAY_EGRESS_PROXY"),
      ),
      pools: egressPoolsOf(str("HOOKRELAY_EGRESS_POOLS")),
    },
    health: {
      failureThreshold: int("HOOKRELAY_FAILURE_THRESHOLD", 10, 1),
      cooldownMs: int("HOOKRELAY_COOLDOWN_MS", 300_000, 0),
      cooldownCapMs: int("HOOKRELAY_COOLDOWN_CAP_MS", 3_600_000, 0),
      slowP95Ms: int("HOOKRELAY_SLOW_P95_MS", 2_000, 1),
      verySlowP95Ms: int("HOOKRELAY_VERY_SLOW_P95_MS", 5_000, 1),
      verySlowFailureThreshold: int("HOOKRELAY_VERY_SLOW_FAILURE_THRESHOLD", 3, 1),
      minSamples: int("HOOKRELAY_SLOW_MIN_SAMPLES", 20, 1),
      windowMs: int("HOOKRELAY_LATENCY_WINDOW_MS", 24 * 3_600_000, 60_000),
      statsIntervalMs: int("HOOKRELAY_STATS_INTERVAL_MS", 60_000, 100),
      adaptiveConcurrency: adaptiveConcurrencyOf(str("HOOKRELAY_ADAPTIVE_CONCURRENCY")),
    },
    alerts: {
      deadLetterWindowMs: int("HOOKRELAY_ALERT_DEAD_LETTER_WINDOW_MS", 15 * 60_000, 1_000),
      deadLetterMin: int("HOOKRELAY_ALERT_DEAD_LETTER_MIN", 10, 1),
      oldestPendingMs: int("HOOKRELAY_ALERT_OLDEST_PENDING_MS", 30 * 60_000, 1_000),
      webhookUrl: str("HOOKRELAY_ALERT_WEBHOOK_URL"),
    },
    retention: {
      payloadMs: int("HOOKRELAY_RETENTION_PAYLOAD_MS", 30 * 86_400_000, 60_000),
      attemptsMs: int("HOOKRELAY_RETENTION_ATTEMPTS_MS", 30 * 86_400_000, 60_000),
      deadLetterMs: int("HOOKRELAY_RETENTION_DEAD_LETTER_MS", 30 * 86_400_000, 60_000),
      batch: int("HOOKRELAY_RETENTION_BATCH", 2_000, 1),
    },
    partitions: {
      interval: partitionIntervalOf(str("HOOKRELAY_PARTITION_INTERVAL")),
      aheadMs: int("HOOKRELAY_PARTITIONS_AHEAD_MS", 2 * 86_400_000, 0),
    },
    worker: {
      concurrency: int("HOOKRELAY_WORKER_CONCURRENCY", 1024, 1),
      claimBatch: int("HOOKRELAY_CLAIM_BATCH", 256, 1),
      pollIntervalMs: int("HOOKRELAY_POLL_INTERVAL_MS", 1_000, 1),
      leaseMarginMs: int("HOOKRELAY_LEASE_MARGIN_MS", 30_000, 0),
      flushIntervalMs: int("HOOKRELAY_RESULT_FLUSH_MS", 20, 1),
      flushBatch: int("HOOKRELAY_RESULT_FLUSH_BATCH", 256, 1),
      shutdownTimeoutMs: int("HOOKRELAY_SHUTDOWN_TIMEOUT_MS", 30_000, 0),
      maintenanceIntervalMs: int("HOOKRELAY_MAINTENANCE_INTERVAL_MS", 60_000, 10),
      heartbeatStaleMs: int("HOOKRELAY_HEARTBEAT_STALE_MS", 10_000, 500),
      livenessJudgeAfterMs: int("HOOKRELAY_LIVENESS_JUDGE_AFTER_MS", 3_000, 0),
      pooledPollIntervalMs: int("HOOKRELAY_POOLED_POLL_INTERVAL_MS", 250, 1),
      replayRatePerSecond: int("HOOKRELAY_REPLAY_RATE_PER_SECOND", 50, 1),
    },
  };
  const merged: Config = {
    ...config,
    ...overrides,
    delivery: { ...config.delivery, ...overrides.delivery },
    health: { ...config.health, ...overrides.health },
    alerts: { ...config.alerts, ...overrides.alerts },
    retention: { ...config.retention, ...overrides.retention },
    worker: { ...config.worker, ...overrides.worker },
  };
  // after the overrides: a URL given by a flag gets the TLS settings too
  for (const key of ["databaseUrl", "databaseDirectUrl", "migrationDatabaseUrl"] as const)
    merged[key] = withDbTls(env, merged[key]);
  if (merged.delivery.retryCapMs < merged.delivery.retryBaseMs) {
    throw new ConfigError("HOOKRELAY_RETRY_CAP_MS must be >= HOOKRELAY_RETRY_BASE_MS");
  }
  return merged;
}
