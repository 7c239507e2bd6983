/**
 * `idempotency-key` on POST: the first response (status < 500) is stored and replayed for
 * a repeat of the same request within the TTL. The same key with a different request is
 * 422; a repeat while the first is still running is 409. A 5xx is not stored, so the
 * client's retry runs the request again.
 */
import { createHash } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Queryable } from "../db/pool.ts";
import { ApiError, badRequest } from "../errors.ts";

declare module "fastify" {
  interface FastifyRequest {
    idempotency?: { principal: string; key: string };
    rawBody?: string;
  }
}

const MAX_KEY_LENGTH = 256;

export function registerIdempotency(app: FastifyInstance, db: Queryable, ttlMs: number): void {
  app.addHook("preHandler", async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method !== "POST") return;
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
    // Take the key, or take it over if the stored one has expired.
    const taken = await db.query(
      `insert into idempotency_keys (principal, key, request_hash)
       values ($1::text, $2::text, $3::text)
       on conflict (principal, key) do update
         set request_hash = excluded.request_hash, status_code = null, response_body = null,
             created_at = now()
         where idempotency_keys.created_at < now() - $4::integer * interval '1 millisecond'
            -- a first request that never finished (its process died) does not block forever
            or (idempotency_keys.status_code is null
                and idempotency_keys.created_at < now() - interval '60 seconds')
       returning 1`,
      [principal, key, requestHash, ttlMs],
    );
    if (taken.rowCount === 1) {
      request.idempotency = { principal, key };
      return;
    }
    const { rows } = await db.query(
      `select request_hash, status_code, response_body from idempotency_keys
       where principal = $1::text and key = $2::text`,
      [principal, key],
    );
    const stored = rows[0];
    if (!stored) throw new ApiError(409, "idempotency_conflict", "idempotency-key in use; retry");
    if (stored.request_hash !== requestHash) {
      throw new ApiError(
        422,
        "idempotency_key_reused",
        "this idempotency-key was used with a different request",
      );
    }
    if (stored.status_code === null) {
      throw new ApiError(
        409,
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
    if (reply.statusCode >= 500) {
      await db.query("delete from idempotency_keys where principal = $1::text and key = $2::text", [
        idem.principal,
        idem.key,
      ]);
    } else {
      await db.query(
        `update idempotency_keys set status_code = $3::integer, response_body = $4::text
         where principal = $1::text and key = $2::text`,
        [idem.principal, idem.key, reply.statusCode, typeof payload === "string" ? payload : ""],
      );
    }
    return payload;
  });
}
