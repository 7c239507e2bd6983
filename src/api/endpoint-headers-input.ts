/**
 * Svix's endpoint header calls as changes to the stored headers (api/routes/endpoint-headers.ts):
 * PUT replaces them all, PATCH merges (a null value or a name in `deleteHeaders` removes a
 * header). Names are case-insensitive: a header given as `authorization` replaces a stored
 * `Authorization`. The result passes the same checks as an endpoint body's `headers`
 * (api/endpoint-input.ts, checkHeaders).
 *
 * The mask: a sensitive header sent with the value MASK keeps the value stored under that
 * name, since that is what GET answered for it (security/sensitive-headers.ts); MASK for a
 * header that is not stored is refused, because it would be sent as a literal "***".
 */
import { MASK } from "../security/redact.ts";
import { isSensitiveHeader } from "../security/sensitive-headers.ts";
import { checkHeaders } from "./endpoint-input.ts";
import { validationError } from "./errors.ts";

/** At most this many custom headers per endpoint (the endpoint body's own limit). */
export const MAX_HEADERS = 32;

export const headersPutBody = {
  type: "object",
  additionalProperties: false,
  required: ["headers"],
  properties: {
    headers: {
      type: "object",
      additionalProperties: { type: "string", maxLength: 4096 },
      propertyNames: { maxLength: 256 },
      maxProperties: MAX_HEADERS,
    },
  },
} as const;

export const headersPatchBody = {
  type: "object",
  additionalProperties: false,
  required: ["headers"],
  properties: {
    headers: {
      type: "object",
      additionalProperties: { type: ["string", "null"], maxLength: 4096 },
      propertyNames: { maxLength: 256 },
      maxProperties: MAX_HEADERS * 2,
    },
    // svix 2's EndpointHeadersPatchIn: names to remove
    deleteHeaders: {
      type: "array",
      items: { type: "string", minLength: 1, maxLength: 256 },
      maxItems: MAX_HEADERS * 2,
    },
  },
} as const;

export interface HeadersPatchIn {
  headers: Record<string, string | null>;
  deleteHeaders?: string[];
}

type Sensitive = (name: string) => boolean;

/** The stored entry named `name` case-insensitively, if any. */
function storedEntry(
  stored: Record<string, string>,
  name: string,
): readonly [string, string] | undefined {
  const lower = name.toLowerCase();
  return Object.entries(stored).find(([n]) => n.toLowerCase() === lower);
}

/** `value`, or the stored value when it is the mask of a stored sensitive header. */
function unmasked(
  stored: Record<string, string>,
  name: string,
  value: string,
  isSensitiveField: Sensitive,
): string {
  if (value !== MASK || !isSensitiveHeader(name, isSensitiveField)) return value;
  const kept = storedEntry(stored, name);
  if (!kept) {
    throw validationError(
      `header ${JSON.stringify(name)} has the masked value ${MASK}, which keeps a stored value, and this endpoint has none: send the real value`,
    );
  }
  return kept[1];
}

function withoutName(headers: Record<string, string>, name: string): void {
  const lower = name.toLowerCase();
  for (const n of Object.keys(headers)) if (n.toLowerCase() === lower) delete headers[n];
}

/** PUT: the new headers, masks resolved against `stored`, checked. */
export function replacedHeaders(
  stored: Record<string, string>,
  incoming: Record<string, string>,
  isSensitiveField: Sensitive,
): Record<string, string> {
  const next: Record<string, string> = {};
  for (const [name, value] of Object.entries(incoming))
    next[name] = unmasked(stored, name, value, isSensitiveField);
  return checkHeaders(next);
}

/** PATCH: `stored` with the patch applied, masks resolved, checked. */
export function patchedHeaders(
  stored: Record<string, string>,
  patch: HeadersPatchIn,
  isSensitiveField: Sensitive,
): Record<string, string> {
  const lowered = new Map<string, string>();
  for (const name of Object.keys(patch.headers)) {
    const prior = lowered.get(name.toLowerCase());
    if (prior !== undefined)
      throw validationError(
        `headers ${JSON.stringify(prior)} and ${JSON.stringify(name)} are the same header (names are case-insensitive): give it once`,
      );
    lowered.set(name.toLowerCase(), name);
  }
  const next = { ...stored };
  for (const name of patch.deleteHeaders ?? []) {
    if (lowered.has(name.toLowerCase()))
      throw validationError(`header ${JSON.stringify(name)} is both set and deleted`);
    withoutName(next, name);
  }
  for (const [name, value] of Object.entries(patch.headers)) {
    const kept = value === null ? null : unmasked(stored, name, value, isSensitiveField);
    withoutName(next, name);
    if (kept !== null) next[name] = kept;
  }
  if (Object.keys(next).length > MAX_HEADERS)
    throw validationError(`an endpoint has at most ${MAX_HEADERS} custom headers`);
  return checkHeaders(next);
}
