/**
 * Portal secrets (docs/portal.md): the access link's token, `hrpt_` + 43 base64url
 * characters (32 random bytes), and the session cookie's value, 32 random bytes in
 * base64url. The prefix makes a leaked link recognisable; the shape check refuses junk
 * before any database lookup. Only SHA-256 hashes of either are stored.
 */
import { createHash, randomBytes } from "node:crypto";

const TOKEN_PREFIX = "hrpt_";
const TOKEN_PATTERN = /^hrpt_[A-Za-z0-9_-]{43}$/;
const SESSION_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A new access-link token. */
export const generatePortalToken = (): string =>
  TOKEN_PREFIX + randomBytes(32).toString("base64url");

/** A new session secret (the cookie's value). */
export const generatePortalSessionSecret = (): string => randomBytes(32).toString("base64url");

export const isPortalTokenShape = (value: string): boolean => TOKEN_PATTERN.test(value);
export const isPortalSessionShape = (value: string): boolean => SESSION_PATTERN.test(value);

/** The stored form of a token or session secret. */
export const portalSecretHash = (secret: string): string =>
  createHash("sha256").update(secret).digest("hex");
