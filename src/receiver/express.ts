/**
 * Express middleware (Express 4 or 5; no import of express, so the kit loads without it):
 *
 *   app.post("/webhooks", expressWebhookMiddleware({ secret, dedup }), (req, res) => {
 *     req.webhook.id; req.body; // the verified message and its parsed payload
 *   });
 *
 * It reads the raw body itself, or takes it from express.raw() / express.text(), and
 * refuses (next(err), status 500) a body another parser already consumed. A bad signature
 * is answered 401 `{ code, reason, detail }`; with `dedup`, a message already handled is
 * answered 200 without calling the handler.
 */
import type { ServerResponse } from "node:http";
import { makeDedupGate } from "./dedup-gate.ts";
import {
  defaultDedupError,
  isRequestError,
  type ReceivedWebhook,
  type ReceiverOptions,
} from "./options.ts";
import { DEFAULT_BODY_LIMIT_BYTES, type RequestWithBody, readRawBody } from "./raw-body.ts";
import { onResponseDone } from "./response-done.ts";
import { makeWebhookVerifier, type VerifiedWebhook } from "./verify.ts";

declare global {
  // Express's own request type (@types/express), when it is installed; merging into it
  // gives handlers after the middleware a typed `req.webhook`.
  namespace Express {
    interface Request {
      /** the verified message, after expressWebhookMiddleware */
      webhook?: ReceivedWebhook;
    }
  }
}

/** Express's (req, res, next), typed structurally so express need not be installed. */
export type WebhookMiddleware = (
  req: RequestWithBody & { webhook?: ReceivedWebhook },
  res: ServerResponse,
  next: (err?: unknown) => void,
) => void;

/** Express middleware that verifies, optionally deduplicates, then calls the next handler. */
export function expressWebhookMiddleware(options: ReceiverOptions): WebhookMiddleware {
  const verifier = makeWebhookVerifier(options);
  const gate = options.dedup ? makeDedupGate(options.dedup) : undefined;
  const limitBytes = options.limitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const onDedupError = options.onDedupError ?? defaultDedupError;

  return (req, res, next) => {
    const handle = async () => {
      let rawBody: Buffer | string;
      let webhook: VerifiedWebhook;
      try {
        rawBody = await readRawBody(req, limitBytes);
        webhook = verifier.verify(req.headers, rawBody);
      } catch (err) {
        // the sender's fault: answered here; the receiver's own (status 500): to next()
        if (isRequestError(err)) return sendJson(res, err.status, err.toJSON());
        return next(err);
      }
      req.webhook = { ...webhook, rawBody };
      req.body = webhook.payload;
      if (gate) {
        const ticket = await gate.enter(webhook.id);
        if (ticket === "duplicate") return sendJson(res, 200, { duplicate: true, id: webhook.id });
        onResponseDone(res, (ok) => void ticket.leave(ok).catch(onDedupError));
      }
      next();
    };
    handle().catch(next);
  };
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader("content-type", "application/json; charset=utf-8");
  res.setHeader("content-length", Buffer.byteLength(text));
  // an unread body (413) would otherwise be read to its end to keep the connection
  if (status === 413) res.setHeader("connection", "close");
  res.end(text);
}
