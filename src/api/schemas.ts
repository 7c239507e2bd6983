/** JSON-schema pieces shared by the routes. */
import { badRequest } from "../errors.ts";

export const metadataSchema = {
  type: "object",
  additionalProperties: { type: "string", maxLength: 1024 },
  maxProperties: 64,
} as const;

const UID_PATTERN = /^[a-zA-Z0-9\-_.]{1,256}$/;

/** A uid taken from a path (PUT that creates) must pass the same rule as one in a body. */
export function checkPathUid(uid: string): string {
  if (!UID_PATTERN.test(uid)) {
    throw badRequest("a uid must be 1-256 characters of a-z A-Z 0-9 - _ .");
  }
  return uid;
}

export const uidSchema = {
  type: ["string", "null"],
  minLength: 1,
  maxLength: 256,
  pattern: "^[a-zA-Z0-9\\-_.]+$",
} as const;

export const nameListSchema = {
  type: ["array", "null"],
  items: { type: "string", minLength: 1, maxLength: 256, pattern: "^[a-zA-Z0-9\\-_.:*]+$" },
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
