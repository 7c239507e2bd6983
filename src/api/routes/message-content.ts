/**
 * DELETE /app/{app}/msg/{msg}/content: Svix's message.expungeContent. The payload is
 * removed and the message kept: it still lists, with the payload shown as
 * `{"expired": true}` as Svix shows it; deliveries still waiting are canceled (error kind
 * `expunged`), and nothing of it is ever sent again (docs/delivery.md, "Expunged messages";
 * db/queries/message-expunge.ts). 204; a repeat is a 204 too. `msg` is an id or eventId.
 */
import type { FastifyInstance } from "fastify";
import { withTransaction } from "../../db/pool.ts";
import { expungeMessage } from "../../db/queries/message-expunge.ts";
import type { ApiContext } from "../context.ts";
import { notFound } from "../errors.ts";
import { resolveAppId } from "../resolve.ts";
import { findMessageOr404 } from "./messages.ts";

export function registerMessageContentRoute(app: FastifyInstance, { pool }: ApiContext): void {
  app.delete<{ Params: { appId: string; msgId: string } }>(
    "/app/:appId/msg/:msgId/content",
    {
      schema: {
        tags: ["message"],
        summary: "Remove the message's payload; the message is kept (Svix's expungeContent)",
        params: {
          type: "object",
          properties: {
            appId: { type: "string", minLength: 1, maxLength: 256 },
            msgId: { type: "string", minLength: 1, maxLength: 256 },
          },
          required: ["appId", "msgId"],
        },
      },
    },
    async (request, reply) => {
      const appId = await resolveAppId(pool, request.principal, request.params.appId);
      const msg = await findMessageOr404(pool, appId, request.params.msgId);
      const done = await withTransaction(pool, (client) => expungeMessage(client, appId, msg.id));
      if (!done) throw notFound("message");
      return reply.code(204).send();
    },
  );
}
