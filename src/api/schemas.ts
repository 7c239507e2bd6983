/** JSON-schema pieces shared by the routes. */
import { isName, NAME_CHARACTERS, NAME_MAX_LENGTH, NAME_PATTERN, NAME_RULE } from "../names.ts";
import { badRequest } from "./errors.ts";

export const metadataSchema = {
  type: "object",
  additionalProperties: { type: "string", maxLength: 1024 },
  maxProperties: 64,
} as const;

/** A uid taken from a path (PUT that creates) must pass the same rule as one in a body. */
export function checkPathUid(uid: string): string {
  if (!isName(uid)) throw badRequest(`a uid must be ${NAME_RULE}`);
  return uid;
}

/** An event type name, feature flag, or the like (names.ts). */
export const nameSchema = {
  type: "string",
  minLength: 1,
  maxLength: NAME_MAX_LENGTH,
  pattern: NAME_PATTERN,
} as const;

/** An app's or endpoint's uid; null for none. */
export const uidSchema = { ...nameSchema, type: ["string", "null"] } as const;

/** Event type filters and channels: names, plus ":" and the "*" wildcard. */
export const nameListSchema = {
  type: ["array", "null"],
  items: { ...nameSchema, pattern: `^[${NAME_CHARACTERS}:*]+$` },
  maxItems: 256,
  uniqueItems: true,
} as const;

export const appParams = {
  type: "object",
  properties: { appId: { type: "string", minLength: 1, maxLength: 256 } },
  required: ["appId"],
} as const;

export const errorSchema = {
  type: "object",
  properties: { code: { type: "string" }, detail: { type: "string" } },
} as const;

/** ISO timestamp for JSON output. */
export const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);
