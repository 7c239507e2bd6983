/**
 * `HookRelay`: send messages from a Node application straight into the queue. `send()`
 * can run on the application's own `pg` client inside its own transaction (transactional
 * outbox): the event is committed if and only if the business write is, and workers are
 * woken when that transaction commits.
 *
 * Every statement the library sends is unnamed, on its own pool as on the caller's client:
 * either may sit behind a transaction pooler, where a named prepared statement breaks (and
 * with it the caller's transaction), and the caller's session is the caller's
 * (docs/database.md). The library leaves no session state anywhere.
 */
import type { WhileDisabled } from "./config.ts";
import { makePool, type Pool, type Queryable, unnamedQueries } from "./db/pool.ts";
import { appIdsByIdOrUid } from "./db/queries/applications.ts";
import { schemaNameOf } from "./db/schema-name.ts";
import { HookRelayError } from "./errors.ts";
import { formatTraceparent, parseTraceparent } from "./lib/traceparent.ts";
import { isName, NAME_RULE } from "./names.ts";
import { type EnqueueResult, enqueueMessage } from "./queue/enqueue-message.ts";

export type { EnqueueResult };

export interface HookRelayOptions {
  /** a PostgreSQL URL (a pool is created and owned) ... */
  connectionString?: string;
  /** ... or an existing pool (not closed by close()) */
  pool?: Pool;
  /** maxAttempts for endpoints without their own. Default 5. */
  maxAttempts?: number;
  /**
   * What a disabled endpoint without its own whileDisabled does with a message sent now:
   * "hold" it (sent when enabled) or "skip" it (docs/delivery.md, "While an endpoint is
   * disabled"). Default "hold", like the server's HOOKRELAY_WHILE_DISABLED.
   */
  whileDisabled?: WhileDisabled;
  /**
   * The schema of hookrelay's tables (HOOKRELAY_DB_SCHEMA). Given, every statement names
   * it, so `send()` on your client finds them whatever your search_path is, and leaves it
   * as it was (docs/database.md, "Roles and schema"). Default: your connection's search_path.
   */
  schema?: string;
}

export interface SendMessage {
  eventType: string;
  /** a JSON object, or its JSON text (stored and sent byte for byte) */
  payload: unknown;
  eventId?: string;
  channels?: string[];
  tags?: string[];
  deliverAt?: Date;
  /** deliveries with the same key go out one at a time per endpoint, in send order (1-128 characters) */
  orderingKey?: string;
  /**
   * The W3C traceparent of the operation that sends it: its deliveries' attempt spans
   * continue that trace, and endpoints with propagateTrace on send the receiver a child of
   * it (docs/telemetry.md). A malformed one is ignored (the message is still sent).
   */
  traceparent?: string;
}

export class HookRelay {
  readonly #pool: Pool;
  readonly #ownsPool: boolean;
  readonly #maxAttempts: number;
  readonly #schema: string | undefined;
  readonly #whileDisabled: WhileDisabled;

  constructor(options: HookRelayOptions) {
    if (options.pool) {
      this.#pool = options.pool;
      this.#ownsPool = false;
    } else if (options.connectionString) {
      this.#pool = makePool({
        connectionString: options.connectionString,
        max: 5,
        preparedStatements: false,
      });
      this.#ownsPool = true;
    } else {
      throw new HookRelayError("invalid_config", "HookRelay needs a connectionString or a pool");
    }
    this.#maxAttempts = options.maxAttempts ?? 5;
    this.#schema = schemaNameOf(options.schema, "HookRelay's schema option");
    this.#whileDisabled = options.whileDisabled ?? "hold";
    if (this.#whileDisabled !== "hold" && this.#whileDisabled !== "skip")
      throw new HookRelayError("invalid_config", 'whileDisabled must be "hold" or "skip"');
  }

  /**
   * Queues a message for every matching endpoint of the app (id or uid). Pass `client` to
   * make it part of your own open transaction.
   */
  async send(
    app: string,
    message: SendMessage,
    options: { client?: Queryable } = {},
  ): Promise<EnqueueResult> {
    const db = unnamedQueries(options.client ?? this.#pool);
    if (!isName(message.eventType)) {
      throw new HookRelayError("invalid_event_type", `eventType must be ${NAME_RULE}`);
    }
    const key = message.orderingKey;
    if (key !== undefined && (typeof key !== "string" || key.length === 0 || [...key].length > 128))
      throw new HookRelayError(
        "validation_error",
        "orderingKey must be a string of 1 to 128 characters",
      );
    const payload =
      typeof message.payload === "string" ? message.payload : JSON.stringify(message.payload);
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload);
    } catch (err) {
      throw new HookRelayError("invalid_payload", "payload is not valid JSON", {
        cause: err,
      });
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      throw new HookRelayError("invalid_payload", "payload must be a JSON object");
    }
    const appId = (await appIdsByIdOrUid(db, [app], this.#schema)).get(app);
    if (!appId) throw new HookRelayError("not_found", `application ${app} not found`);
    return enqueueMessage(
      db,
      {
        appId,
        eventType: message.eventType,
        payload,
        eventId: message.eventId,
        channels: message.channels,
        tags: message.tags,
        deliverAt: message.deliverAt,
        orderingKey: message.orderingKey,
        traceparent: producerTraceparent(message.traceparent),
      },
      this.#maxAttempts,
      { schema: this.#schema, whileDisabled: this.#whileDisabled },
    );
  }

  async close(): Promise<void> {
    if (this.#ownsPool) await this.#pool.end();
  }
}

/** The producer's traceparent in version-00 form; null when absent or malformed (ignored). */
function producerTraceparent(header: string | undefined): string | null {
  const tp = parseTraceparent(header);
  return tp === null ? null : formatTraceparent(tp);
}
