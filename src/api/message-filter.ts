/**
 * The filters of the message list and its export (docs/browse.md): Svix's event_types,
 * channel, tag, before and after, and hookrelay's delivery_status and endpoint_id. An
 * unknown status or a date that is not one is refused by the schema (422).
 */
import type { Queryable } from "../db/pool.ts";
import type { MessageFilter } from "../db/queries/messages.ts";
import { DeliveryStatus } from "../domain/delivery-states.ts";
import { timeInput } from "./body-check.ts";
import { resolveEndpointId } from "./resolve.ts";

export const messageFilterQuery = {
  event_types: { type: "array", items: { type: "string", maxLength: 256 }, maxItems: 64 },
  channel: { type: "string", maxLength: 256 },
  tag: { type: "string", maxLength: 256 },
  before: { type: "string", format: "date-time" },
  after: { type: "string", format: "date-time" },
  // hookrelay's: messages with a delivery (to endpoint_id when given) in one of these
  // states (the parameter repeated); endpoint_id alone: messages sent to that endpoint
  delivery_status: {
    type: "array",
    items: { type: "string", enum: Object.values(DeliveryStatus) },
    maxItems: 6,
  },
  endpoint_id: { type: "string", minLength: 1, maxLength: 256 },
} as const;

export interface MessageFilterQuery {
  event_types?: string[];
  channel?: string;
  tag?: string;
  before?: string;
  after?: string;
  delivery_status?: string[];
  endpoint_id?: string;
}

/** The filter a query asks for; its endpoint is looked up in the app (404 if not there). */
export async function messageFilterOf(
  db: Queryable,
  appId: string,
  q: MessageFilterQuery,
): Promise<MessageFilter> {
  // event_types arrives comma-joined from the svix client.
  const types = q.event_types?.flatMap((t) => t.split(",")).filter(Boolean);
  return {
    eventTypes: types?.length ? types : null,
    channel: q.channel || null,
    tag: q.tag || null,
    before: timeInput(q.before, "before"),
    after: timeInput(q.after, "after"),
    deliveryStatuses: q.delivery_status?.length ? q.delivery_status : null,
    endpointId: q.endpoint_id ? await resolveEndpointId(db, appId, q.endpoint_id) : null,
  };
}
