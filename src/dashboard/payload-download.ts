/**
 * A message's raw payload, for the pages (which show it bounded, payload-view.ts) and as a
 * download of its own (docs/dashboard.md, "Payloads"): the stored JSON text byte for byte,
 * read through the API's GET /app/{app}/msg/{id} as the page's principal, so the page's
 * scoping holds (a message of another app is the API's 404). The answer is never parsed
 * and re-serialized: the payload's span is cut out of the API's text (api/json-member.ts).
 */
import type { FastifyReply } from "fastify";
import type { Principal } from "../api/auth.ts";
import { answerError, type InProcessCalls } from "../api/in-process.ts";
import { rawMember } from "../api/json-member.ts";

export interface StoredPayload {
  /** the message's id */
  id: string;
  /** the payload as stored */
  text: string;
}

/** The payload of the message at `messageApi` (an API path `/api/v1/app/{app}/msg/{id}`). */
export async function storedPayload(
  calls: InProcessCalls,
  principal: Principal,
  messageApi: string,
): Promise<StoredPayload> {
  const res = await calls.call(principal, "GET", `${messageApi}?with_content=true`);
  if (res.status >= 400) throw answerError(res);
  const id = rawMember(res.text, "id");
  const text = rawMember(res.text, "payload");
  const messageId: unknown = id === undefined ? undefined : JSON.parse(id);
  if (typeof messageId !== "string" || text === undefined)
    throw new Error("the API's message has no id or payload");
  return { id: messageId, text };
}

/** Sends the payload as a JSON file named after the message. */
export function sendPayload(reply: FastifyReply, payload: StoredPayload): FastifyReply {
  const name = `${payload.id.replace(/[^A-Za-z0-9_-]/g, "_")}.json`;
  return reply
    .code(200)
    .type("application/json; charset=utf-8")
    .header("content-disposition", `attachment; filename="${name}"`)
    .header("x-content-type-options", "nosniff")
    .header("cache-control", "no-store")
    .send(payload.text);
}
