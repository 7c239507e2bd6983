/**
 * Jobs an operator starts by hand, run by the server with the server's own settings
 * (retention ages, encryption keys, rate limits), so the CLI and the dashboard never need
 * them (docs/cli.md). Long jobs run in slices of at most `budgetMs` and say whether they
 * are `done`; the caller asks again to go on.
 *   POST /operations/purge               { budgetMs? }          admin
 *   POST /operations/reencrypt-secrets   { after?, budgetMs? }  admin
 *   GET  /dead-letters/requeue-plan      ?app_id=&endpoint_id=&since=&include_failed=
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { HookRelayError } from "../../errors.ts";
import { requeuePlan } from "../../ops/dead-letters.ts";
import { withPartitionOwner } from "../../ops/partition-owner.ts";
import { purgeExpiredUntil } from "../../ops/retention.ts";
import { reencryptSecrets } from "../../security/reencrypt.ts";
import { timeInput } from "../body-check.ts";
import type { ApiContext } from "../context.ts";
import { apiError, forbidden } from "../errors.ts";
import { requeuePlanResponse } from "../health-responses.ts";
import { resolveAppId, resolveEndpointFilter } from "../resolve.ts";

const DEFAULT_BUDGET_MS = 10_000;
const budgetMs = {
  type: "integer",
  minimum: 100,
  maximum: 60_000,
  default: DEFAULT_BUDGET_MS,
  description: "how long this call may work before it answers (ms); call again while done is false",
} as const;

function adminOnly(request: FastifyRequest): void {
  if (request.principal.role !== "admin")
    throw forbidden("only admin keys can run maintenance jobs");
}

export function registerMaintenanceRoutes(
  app: FastifyInstance,
  { pool, config, secretBox }: ApiContext,
): void {
  app.post<{ Body: { budgetMs?: number } }>(
    "/operations/purge",
    {
      schema: {
        tags: ["operations"],
        summary: "Apply the retention settings now",
        description:
          "Applies the server's retention settings: drops the partitions whose rows are all past their age (listed in droppedPartitions: attempts' days, and messages' and deliveries' days, whose messages with a delivery still pending or dead-lettered are kept), and deletes in small batches the dead letters, delivered messages and other attempts past theirs (docs/history.md). A partition whose detach could not get its lock (statements under way held it, three tries of 2 s) is listed in busyPartitions and left for the next purge.",
        body: {
          type: ["object", "null"],
          additionalProperties: false,
          properties: { budgetMs },
        },
      },
    },
    async (request) => {
      adminOnly(request);
      const budget = request.body?.budgetMs ?? DEFAULT_BUDGET_MS;
      // partitions dropped as the owner's role when this one may not (ops/partition-owner.ts)
      return withPartitionOwner(pool, config.migrationDatabaseUrl, (owner) =>
        purgeExpiredUntil(pool, config.retention, Date.now() + budget, undefined, owner),
      );
    },
  );

  app.post<{ Body: { after?: number; budgetMs?: number } }>(
    "/operations/reencrypt-secrets",
    {
      schema: {
        tags: ["operations"],
        summary: "Seal every signing secret under the current encryption key",
        description:
          "Run after adding or rotating HOOKRELAY_ENCRYPTION_KEY on the server. Pass the answer's `after` back to go on.",
        body: {
          type: ["object", "null"],
          additionalProperties: false,
          properties: {
            after: {
              type: "integer",
              minimum: 0,
              maximum: Number.MAX_SAFE_INTEGER,
              description: "cursor from the previous answer",
            },
            budgetMs,
          },
        },
      },
    },
    async (request) => {
      adminOnly(request);
      const budget = request.body?.budgetMs ?? DEFAULT_BUDGET_MS;
      const r = await reencryptSecrets(pool, secretBox, {
        after: request.body?.after ?? 0,
        until: Date.now() + budget,
      }).catch((err: unknown) => {
        // A secret sealed under a key the server was not given: a configuration problem the
        // operator must fix on the server; the batch that met it was not written.
        if (err instanceof HookRelayError && err.code === "encryption_key_missing")
          throw apiError("encryption_key_missing", err.message, { cause: err });
        throw err;
      });
      return {
        reencrypted: r.changed,
        after: r.after,
        done: r.done,
        encrypting: secretBox.encrypting,
      };
    },
  );

  app.get<{
    Querystring: {
      app_id?: string;
      endpoint_id?: string;
      since?: string;
      include_failed?: boolean;
    };
  }>(
    "/dead-letters/requeue-plan",
    {
      schema: {
        tags: ["operations"],
        summary: "What a requeue would take, per endpoint, and at what pace",
        querystring: {
          type: "object",
          properties: {
            app_id: { type: "string", minLength: 1, maxLength: 256 },
            endpoint_id: { type: "string", minLength: 1, maxLength: 256 },
            since: { type: "string", format: "date-time" },
            include_failed: { type: "boolean" },
          },
        },
        response: { 200: requeuePlanResponse },
      },
    },
    async (request) => {
      const q = request.query;
      const own = request.principal.role === "app" ? request.principal.appId : null;
      const appId = q.app_id ? await resolveAppId(pool, request.principal, q.app_id) : own;
      const endpointId = q.endpoint_id
        ? await resolveEndpointFilter(pool, request.principal, appId, q.endpoint_id)
        : undefined;
      const endpoints = await requeuePlan(pool, {
        endpointId,
        since: timeInput(q.since, "since") ?? undefined,
        appId,
        includeFailed: q.include_failed,
      });
      return { total: endpoints.reduce((n, e) => n + e.deliveries, 0), endpoints };
    },
  );
}
