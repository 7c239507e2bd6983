/**
 * The form body of an endpoint with `bodyFormat: "form"` (README.md, Postbacks):
 * `application/x-www-form-urlencoded` from the payload's top-level fields, in their order.
 * Strings as they are, numbers as the producer wrote them, true/false, null as an empty
 * value, a nested object or array as its JSON text.
 */
import { payloadFields } from "./payload-fields.ts";
import { wellFormed } from "./url-template.ts";

export const FORM_CONTENT_TYPE = "application/x-www-form-urlencoded";

/** The form text, or null when the payload is not a JSON object. */
export function formBody(payload: string): string | null {
  const fields = payloadFields(payload).topLevel();
  if (fields === null) return null;
  return fields
    .map(([name, value]) => {
      const text = value.kind === "text" ? value.text : value.kind === "composite" ? value.raw : "";
      return `${formEncode(name)}=${formEncode(text)}`;
    })
    .join("&");
}

/** The form-urlencoded serializer's encoding: space as +, all but *-._ and alphanumerics encoded. */
export function formEncode(value: string): string {
  return encodeURIComponent(wellFormed(value))
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replace(/%20/g, "+");
}
