/**
 * `idempotency-key` on POST: the first response (status < 500) is stored and replayed for
 * a repeat of the same request within the TTL. The same key with a different request is
 * 422; a repeat while the first is still running is 409. A 5xx is not stored, so the
 * client's retry runs the request again. A route whose answer holds a secret kept nowhere
 * else in clear opts out (`config: { idempotency: false }`).
 *
 * If the database becomes unreachable between the request's work and the storing of its
 * answer, the answer still goes out as it is (a 202 means the message was committed): the
 * key is then left taken, and taken over once abandoned (db/queries/idempotency-keys.ts).
 */
import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Queryable } from "../db/pool.ts";
import {
  releaseIdempotencyKey,
  storedResponse,
  storeResponse,
  takeIdempotencyKey,
} from "../db/queries/idempotency-keys.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { apiError, badRequest } from "./errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    idempotency?: { principal: string; key: string };
    rawBody?: string;
  }
  interface FastifyContextConfig {
    /**
     * false: the route's responses are never stored for replay, because they carry a secret
     * that is stored nowhere else in clear (a portal link's token); a repeated request runs
     * again. Default true.
     */
    idempotency?: boolean;
  }
}

const MAX_KEY_LENGTH = 256;

export function registerIdempotency(app: FastifyInstance, db: Queryable, ttlMs: number): void {
  app.addHook("preHandler", async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== "POST" || request.routeOptions.config.idempotency === false) return;
    const header = request.headers["idempotency-key"];
    if (header === undefined || !request.principal) return;
    const key = Array.isArray(header) ? header[0]! : header;
    if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
      throw badRequest(`idempotency-key must be 1-${MAX_KEY_LENGTH} characters`);
    }
    const principal = request.principal.keyId;
    const requestHash = createHash("sha256")
      .update(`${request.method} ${request.url}\n`)
      .update(request.rawBody ?? "")
      .digest("hex");
    const id = { principal, key };
    // Take the key, or take it over if the stored one has expired.
    if (await takeIdempotencyKey(db, id, requestHash, ttlMs)) {
      request.idempotency = id;
      return;
    }
    const stored = await storedResponse(db, id);
    if (!stored) throw apiError("idempotency_conflict", "idempotency-key in use; retry");
    if (stored.request_hash !== requestHash) {
      throw apiError(
        "idempotency_key_reused",
        "this idempotency-key was used with a different request",
      );
    }
    if (stored.status_code === null) {
      throw apiError(
        "idempotency_in_progress",
        "the first request with this idempotency-key is still running",
      );
    }
    reply.header("idempotent-replayed", "true");
    reply.code(stored.status_code).type("application/json");
    return reply.send(stored.response_body ?? "");
  });

  app.addHook("onSend", async (request, reply, payload) => {
    const idem = request.idempotency;
    if (!idem) return payload;
    request.idempotency = undefined;
    try {
      if (reply.statusCode >= 500) await releaseIdempotencyKey(db, idem);
      else
        await storeResponse(db, idem, reply.statusCode, typeof payload === "string" ? payload : "");
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
      request.log.warn({ err }, "idempotency-key answer not stored: database unreachable");
    }
    return payload;
  });
}
