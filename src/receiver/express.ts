/**
 * Express middleware (Express 4 or 5; no import of express, so the kit loads without it):
 *
 *   app.post("/webhooks", expressWebhookMiddleware({ secret, dedup }), (req, res) => {
 *     req.webhook.id; req.body; // the verified message and its parsed payload
 *   });
 *
 * Mount it before express.json() (or give its route express.raw()): it reads the raw body
 * itself, or takes it from express.raw() / express.text(). A bad signature is answered 401
 * `{ code, reason, detail }`; with `dedup`, a message already handled is answered 200
 * without calling the handler. It fails safe: its own failures (a body another parser
 * already consumed, a dedup store that failed) are answered 500 `{ code, detail }` in JSON,
 * never by Express's default HTML error page, unless `forwardErrors` sends them to next(err)
 * (docs/receiver.md, When the kit fails).
 */
import type { ServerResponse } from "node:http";
import { makeDedupGate } from "./dedup-gate.ts";
import { WebhookDedupError } from "./errors.ts";
import {
  defaultDedupError,
  defaultKitError,
  failureAnswer,
  isRequestError,
  type ReceivedWebhook,
  type ReceiverOptions,
} from "./options.ts";
import { DEFAULT_BODY_LIMIT_BYTES, type RequestWithBody, readRawBody } from "./raw-body.ts";
import { onResponseDone } from "./response-done.ts";
import { makeWebhookVerifier } from "./verify.ts";

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
  const onError = options.onError ?? defaultKitError;

  /** Verifies and deduplicates; true when the handler should run. */
  async function accept(
    req: Parameters<WebhookMiddleware>[0],
    res: ServerResponse,
  ): Promise<boolean> {
    const rawBody = await readRawBody(req, limitBytes);
    const webhook = verifier.verify(req.headers, rawBody);
    req.webhook = { ...webhook, rawBody };
    req.body = webhook.payload;
    if (!gate) return true;
    const ticket = await gate.enter(webhook.id).catch((cause: unknown) => {
      throw new WebhookDedupError({ cause });
    });
    if (ticket === "duplicate") {
      sendJson(res, 200, { duplicate: true, id: webhook.id });
      return false;
    }
    onResponseDone(res, (ok) => void ticket.leave(ok).catch(onDedupError));
    return true;
  }

  return (req, res, next) => {
    accept(req, res).then(
      (handle) => {
        if (handle) next();
      },
      (err: unknown) => {
        // the sender's mistake: always answered here
        if (isRequestError(err)) return sendJson(res, err.status, err.toJSON());
        if (options.forwardErrors) return next(err);
        // The receiver's own: answered here too, never by Express's default handler, whose
        // HTML page and stack trace the sender would store and retry until its circuit opens.
        onError(err);
        const answer = failureAnswer(err);
        sendJson(res, answer.status, answer.body);
      },
    );
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
