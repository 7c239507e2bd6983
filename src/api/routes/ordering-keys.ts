/**
 * Blocked ordering keys of an endpoint (docs/delivery.md, "Ordering"), app-scoped like the
 * endpoint's other routes:
 *   GET  /app/{appId}/endpoint/{endpointId}/ordering-keys/blocked?limit=&iterator=
 *   POST /app/{appId}/endpoint/{endpointId}/ordering-keys/blocked/{deliveryId}/retry
 *   POST /app/{appId}/endpoint/{endpointId}/ordering-keys/blocked/{deliveryId}/skip
 * The actions take only a key's current blocked head (409 otherwise; 404 for a delivery
 * that is not this endpoint's, as for one that does not exist): retry requeues a dead
 * head (the dead-letter requeue) or makes a failed one due now; skip cancels it, a dead
 * letter included, so the next delivery of the key goes.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { byDeliveryId, deliveryIdRangeSql } from "../../db/sql/delivery-id-blocks.ts";
import { publicIdsOf } from "../../ids-public-key.ts";
import { requeueDeliveries } from "../../ops/dead-letters.ts";
import {
  type BlockedKeyRow,
  blockedHead,
  listBlockedKeys,
  retryFailedHead,
  skipHead,
} from "../../ops/ordering-keys.ts";
import type { ApiContext } from "../context.ts";
import { conflict, notFound } from "../errors.ts";
import { blockedKeyActionResponse, blockedKeyPageResponse } from "../ordering-key-responses.ts";
import { DEFAULT_LIMIT, MAX_LIMIT } from "../pagination.ts";
import { cursorKeyOf, rowKeyOf } from "../public-id-input.ts";
import { resolveAppId, resolveEndpointId } from "../resolve.ts";
import { iso } from "../schemas.ts";

const id = { type: "string", maxLength: 256 } as const;
const BASE = "/app/:appId/endpoint/:endpointId/ordering-keys/blocked";

type EpParams = { appId: string; endpointId: string };
type HeadParams = EpParams & { deliveryId: string };

export function registerOrderingKeyRoutes(
  app: FastifyInstance,
  { pool, config, redactor }: ApiContext,
): void {
  async function endpointOf(request: FastifyRequest<{ Params: EpParams }>) {
    const appId = await resolveAppId(pool, request.principal, request.params.appId);
    return { appId, endpointId: await resolveEndpointId(pool, appId, request.params.endpointId) };
  }

  /** The head the path names, if it is still its key's blocked head: 404 / 409 otherwise. */
  async function headOf(request: FastifyRequest<{ Params: HeadParams }>) {
    const { appId, endpointId } = await endpointOf(request);
    const deliveryId = await rowKeyOf(
      pool,
      request.principal,
      "delivery",
      request.params.deliveryId,
    );
    const head = await blockedHead(pool, endpointId, deliveryId);
    if (!head) {
      // another endpoint's (or app's) delivery is one that does not exist here
      const there = await byDeliveryId(
        pool,
        deliveryId,
        async ([lo, hi]) =>
          (
            await pool.query(
              `select 1 from deliveries
               where id = $1::bigint and ${deliveryIdRangeSql("", "$3", "$4")}
                 and endpoint_id = $2::text`,
              [deliveryId, endpointId, lo, hi],
            )
          ).rowCount !== 0,
        (found) => found,
      );
      if (!there) throw notFound("delivery");
      throw conflict(
        `delivery ${request.params.deliveryId} is not the blocked head of an ordering key of this endpoint`,
      );
    }
    return { appId, head };
  }

  const shown = async (r: BlockedKeyRow) => ({
    deliveryId: (await publicIdsOf(pool)).format("delivery", r.deliveryId),
    key: r.key,
  });

  app.get<{ Params: EpParams; Querystring: { limit?: number; iterator?: string } }>(
    BASE,
    {
      schema: {
        tags: ["health"],
        params: {
          type: "object",
          properties: { appId: id, endpointId: id },
          required: ["appId", "endpointId"],
        },
        querystring: {
          type: "object",
          properties: {
            limit: { type: "integer", minimum: 1, maximum: MAX_LIMIT },
            iterator: { type: "string", minLength: 1, maxLength: 256 },
          },
        },
        response: { 200: blockedKeyPageResponse },
      },
    },
    async (request) => {
      const { endpointId } = await endpointOf(request);
      const limit = request.query.limit ?? DEFAULT_LIMIT;
      const after = request.query.iterator
        ? await cursorKeyOf(pool, request.principal, "delivery", request.query.iterator)
        : null;
      const rows = await listBlockedKeys(pool, endpointId, { after, limit: limit + 1 });
      const ids = await publicIdsOf(pool);
      const page = rows.slice(0, limit);
      const last = page[page.length - 1];
      return {
        data: page.map((r) => ({
          key: r.key,
          wholeEndpoint: r.key === "",
          deliveryId: ids.format("delivery", r.deliveryId),
          msgId: r.messageId,
          reason: r.status === "dead_letter" ? "dead_letter" : "retrying",
          since: iso(r.since),
          nextAttemptAt: iso(r.nextAttemptAt),
          attemptCount: r.attemptCount,
          lastErrorKind: r.lastErrorKind,
          lastStatusCode: r.lastStatusCode,
          lastError: r.lastError === null ? null : redactor.text(r.lastError),
          waiting: r.waiting,
        })),
        iterator: last ? ids.format("delivery", last.deliveryId) : null,
        prevIterator: null,
        done: rows.length <= limit,
      };
    },
  );

  const headParams = {
    type: "object",
    properties: { appId: id, endpointId: id, deliveryId: id },
    required: ["appId", "endpointId", "deliveryId"],
  } as const;
  const moved = (what: string) =>
    conflict(`the head moved while it was being ${what}; read the blocked keys again`);

  app.post<{ Params: HeadParams }>(
    `${BASE}/:deliveryId/retry`,
    {
      schema: { tags: ["health"], params: headParams, response: { 200: blockedKeyActionResponse } },
    },
    async (request) => {
      const { appId, head } = await headOf(request);
      if (head.status === "dead_letter") {
        const n = await requeueDeliveries(
          pool,
          { deliveryId: head.deliveryId, appId },
          `api:${request.principal.keyId}`,
          config.delivery.maxAttempts,
        );
        if (n !== 1) throw moved("retried");
        return { ...(await shown(head)), status: "pending" };
      }
      if (!(await retryFailedHead(pool, head.deliveryId))) throw moved("retried");
      return { ...(await shown(head)), status: "failed" };
    },
  );

  app.post<{ Params: HeadParams }>(
    `${BASE}/:deliveryId/skip`,
    {
      schema: { tags: ["health"], params: headParams, response: { 200: blockedKeyActionResponse } },
    },
    async (request) => {
      const { head } = await headOf(request);
      if (!(await skipHead(pool, head.deliveryId))) throw moved("skipped");
      return { ...(await shown(head)), status: "canceled" };
    },
  );
}
