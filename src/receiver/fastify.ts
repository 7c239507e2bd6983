/**
 * Fastify plugin. It changes the scope it is registered in (like fastify-plugin), so
 * register it inside the scope of your webhook routes, not at the root of an app that also
 * parses JSON:
 *
 *   app.register(async (hooks) => {
 *     await hooks.register(fastifyWebhookPlugin, { secret, dedup });
 *     hooks.post("/webhooks", async (req) => { req.webhook!.id; req.body; });
 *   });
 *
 * In that scope every content type is kept as its raw bytes (a Buffer), a preHandler
 * verifies the signature (401 `{ code, reason, detail }` when it fails), then
 * `request.webhook` holds the verified message and `request.body` its parsed payload. With
 * `dedup`, a message already handled is answered 200 and the handler is not called. Its own
 * failures (a parser added to the scope after it, a dedup store that failed) are answered
 * 500 `{ code, detail }`, like the Express middleware's, unless `forwardErrors` throws
 * them to Fastify's error handler (docs/receiver.md, When the kit fails).
 */
import type { FastifyPluginAsync } from "fastify";
import { makeDedupGate } from "./dedup-gate.ts";
import { BODY_ERROR_CODES, WebhookBodyError, WebhookDedupError } from "./errors.ts";
import {
  defaultDedupError,
  failureAnswer,
  isRequestError,
  type ReceivedWebhook,
  type ReceiverOptions,
} from "./options.ts";
import { DEFAULT_BODY_LIMIT_BYTES } from "./raw-body.ts";
import { onResponseDone } from "./response-done.ts";
import { makeWebhookVerifier } from "./verify.ts";

declare module "fastify" {
  interface FastifyRequest {
    /** the verified message, in a scope with fastifyWebhookPlugin (absent outside one) */
    webhook?: ReceivedWebhook | null;
  }
}

const EMPTY = Buffer.alloc(0);

const plugin: FastifyPluginAsync<ReceiverOptions> = async (scope, options) => {
  const verifier = makeWebhookVerifier(options);
  const gate = options.dedup ? makeDedupGate(options.dedup) : undefined;
  const onDedupError = options.onDedupError ?? defaultDedupError;

  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(
    "*",
    { parseAs: "buffer", bodyLimit: options.limitBytes ?? DEFAULT_BODY_LIMIT_BYTES },
    (_request, body, done) => done(null, body),
  );
  if (!scope.hasRequestDecorator("webhook")) scope.decorateRequest("webhook", null);

  scope.addHook("preHandler", async (request, reply) => {
    try {
      const rawBody = rawBodyOf(request.body);
      const webhook = verifier.verify(request.headers, rawBody);
      request.webhook = { ...webhook, rawBody };
      request.body = webhook.payload;
      if (!gate) return;
      const ticket = await gate.enter(webhook.id).catch((cause: unknown) => {
        throw new WebhookDedupError({ cause });
      });
      if (ticket === "duplicate") return reply.code(200).send({ duplicate: true, id: webhook.id });
      onResponseDone(reply.raw, (ok) => void ticket.leave(ok).catch(onDedupError));
    } catch (err) {
      // the sender's mistake: always answered here
      if (isRequestError(err)) return reply.code(err.status).send(err.toJSON());
      if (options.forwardErrors) throw err;
      // the receiver's own: answered in the same JSON as the Express middleware's
      if (options.onError) options.onError(err);
      else request.log.error({ err }, "hookrelay/receiver: a webhook was answered 500");
      const answer = failureAnswer(err);
      return reply.code(answer.status).send(answer.body);
    }
  });
};

/**
 * The body as the plugin's parser kept it: a Buffer, or nothing (a GET). Anything else was
 * made by a content-type parser added to this scope after the plugin (or in a child scope),
 * and the signed bytes are gone.
 */
function rawBodyOf(body: unknown): Buffer | string {
  if (Buffer.isBuffer(body) || typeof body === "string") return body;
  if (body === undefined || body === null) return EMPTY;
  throw new WebhookBodyError(
    BODY_ERROR_CODES.consumed,
    "the request body was parsed by a content-type parser added after fastifyWebhookPlugin " +
      "(in its scope or a child scope), so the signed bytes are gone: register the plugin " +
      "in a scope of its own and add no content-type parser there",
  );
}

// Fastify's own marker (what fastify-plugin sets): the hooks, parser and decorator apply to
// the scope that registers the plugin instead of a child scope of their own.
Object.assign(plugin, {
  [Symbol.for("skip-override")]: true,
  [Symbol.for("fastify.display-name")]: "hookrelay-receiver",
});

/** The Fastify plugin: raw bodies, verification in a preHandler, optional deduplication. */
export const fastifyWebhookPlugin = plugin;
