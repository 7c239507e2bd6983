/**
 * Hooks on every request: a NUL in the URL or in a JSON body is refused (PostgreSQL text
 * cannot hold NUL, and no identifier or name needs one, src/api/body-check.ts), and the
 * answers sent while the server closes ask the client to close the connection.
 */
import type { FastifyInstance } from "fastify";
import { checkBody } from "./body-check.ts";
import { badRequest } from "./errors.ts";

/** Adds the hooks to `app` (at its root, so they cover every route registered on it). */
export function registerRequestGuards(app: FastifyInstance): void {
  // close() waits for every connection; one that is busy when it begins would then stay
  // open, idle, until the keep-alive timeout (72 s). Its last answer says "close" instead.
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  app.addHook("onSend", (_request, reply, payload, done) => {
    if (closing) reply.header("connection", "close");
    done(null, payload);
  });

  app.addHook("onRequest", async (request) => {
    if (/%00/.test(request.url)) throw badRequest("NUL characters are not allowed in the URL");
  });
  app.addHook("preValidation", async (request) => {
    if (request.body === undefined) return;
    const problem = checkBody(request.body);
    if (problem) throw badRequest(problem);
  });
}
