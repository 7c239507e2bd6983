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
 * `dedup`, a message already handled is answered 200 and the handler is not called.
 */
import type { FastifyPluginAsync } from "fastify";
import { makeDedupGate } from "./dedup-gate.ts";
import {
  defaultDedupError,
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
    const body = request.body;
    const rawBody = Buffer.isBuffer(body) || typeof body === "string" ? body : EMPTY;
    let webhook: ReturnType<typeof verifier.verify>;
    try {
      webhook = verifier.verify(request.headers, rawBody);
    } catch (err) {
      if (isRequestError(err)) {
        return reply.code(err.status).send(err.toJSON());
      }
      throw err;
    }
    request.webhook = { ...webhook, rawBody };
    request.body = webhook.payload;
    if (gate) {
      const ticket = await gate.enter(webhook.id);
      if (ticket === "duplicate") return reply.code(200).send({ duplicate: true, id: webhook.id });
      onResponseDone(reply.raw, (ok) => void ticket.leave(ok).catch(onDedupError));
    }
  });
};

// Fastify's own marker (what fastify-plugin sets): the hooks, parser and decorator apply to
// the scope that registers the plugin instead of a child scope of their own.
Object.assign(plugin, {
  [Symbol.for("skip-override")]: true,
  [Symbol.for("fastify.display-name")]: "hookrelay-receiver",
});

/** The Fastify plugin: raw bodies, verification in a preHandler, optional deduplication. */
export const fastifyWebhookPlugin = plugin;
