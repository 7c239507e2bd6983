/**
 * An expunged message's payload (Svix's message.expungeContent; docs/delivery.md,
 * "Expunged messages"): what messages.payload holds once its content is removed. No
 * message is accepted with it (a payload is a JSON object), so it cannot be mistaken for
 * content; the API shows it as Svix does, and the sender never sends it.
 */
export const EXPUNGED_PAYLOAD = "";

/** What the API shows as an expunged message's payload (Svix's answer). */
export const EXPUNGED_PAYLOAD_SHOWN = '{"expired":true}';

export const isExpunged = (payload: string): boolean => payload === EXPUNGED_PAYLOAD;
