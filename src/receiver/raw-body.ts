/**
 * The raw request body for verification. The signature covers the exact bytes sent; JSON
 * parsed and serialized again rarely has the same bytes (key order, spacing, number
 * spelling, escapes), so a parsed body cannot be verified. See docs/receiver.md.
 */
import type { IncomingMessage } from "node:http";
import { BODY_ERROR_CODES, WebhookBodyError } from "./errors.ts";

/** 1 MiB, the same default as hookrelay's own API body limit. */
export const DEFAULT_BODY_LIMIT_BYTES = 1_048_576;

/** A request as Express (4 or 5) or plain node:http hands it over. */
export type RequestWithBody = IncomingMessage & { body?: unknown; _body?: unknown };

/**
 * The raw body: `req.body` when express.raw() (a Buffer) or express.text() (a string) read
 * it, else the stream. Throws WebhookBodyError when a parser already consumed the stream.
 */
export async function readRawBody(
  req: RequestWithBody,
  limitBytes: number,
): Promise<Buffer | string> {
  if (Buffer.isBuffer(req.body)) return req.body;
  if (typeof req.body === "string") return req.body;
  // A parser that ran has read the stream to its end (body-parser 1, of Express 4, also sets
  // `_body`). A parser that skipped the request (another content type) leaves the stream
  // unread, whatever it put in req.body (`{}` in Express 4), and it is read here.
  if (req._body === true || req.readableEnded || (req.complete && !req.readable)) {
    throw new WebhookBodyError(
      BODY_ERROR_CODES.consumed,
      "the request body was already parsed (express.json() or similar ran before the webhook " +
        "middleware), so the signed bytes are gone: mount the webhook route before the JSON " +
        "parser, or give it express.raw({ type: '*/*' })",
    );
  }
  const declared = Number(req.headers["content-length"]);
  if (declared > limitBytes) throw tooLarge(limitBytes);
  return await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onAborted);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        req.pause();
        reject(tooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(
        new WebhookBodyError(BODY_ERROR_CODES.aborted, "reading the body failed", { cause: err }),
      );
    };
    const onAborted = () => {
      cleanup();
      reject(new WebhookBodyError(BODY_ERROR_CODES.aborted, "the request broke off mid-body"));
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onAborted);
  });
}

const tooLarge = (limitBytes: number) =>
  new WebhookBodyError(BODY_ERROR_CODES.tooLarge, `the body is larger than ${limitBytes} bytes`);
