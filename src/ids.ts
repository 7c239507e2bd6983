/**
 * Resource ids: a type prefix and 22 base62 characters that sort by creation time
 * (48-bit millisecond timestamp, then 80 random bits), e.g. `msg_0Oq7mJ5zCwZ1vR...`.
 * Within one millisecond, ids from one process still increase (the random part is
 * incremented), so "order by id" is creation order for listings and cursors.
 */
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const LENGTH = 22; // 62^22 > 2^128

export const ID_PREFIX = {
  app: "app_",
  endpoint: "ep_",
  message: "msg_",
  apiKey: "key_",
  portalToken: "ptok_",
  /** a background task (Svix's QueueBackgroundTask id) */
  backgroundTask: "qtask_",
} as const;

let lastMs = 0;
let lastRandom = 0n;

function encode(value: bigint): string {
  let out = "";
  for (let i = 0; i < LENGTH; i++) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

/** A new time-sortable id with the given prefix. */
export function newId(prefix: string, now: number = Date.now()): string {
  let random: bigint;
  if (now <= lastMs) {
    now = lastMs;
    random = lastRandom + 1n;
  } else {
    random = BigInt(`0x${randomBytes(10).toString("hex")}`);
  }
  lastMs = now;
  lastRandom = random;
  return prefix + encode((BigInt(now) << 80n) | random);
}

/** True when `id` has the prefix and the shape of an id made by `newId`. */
export function looksLikeId(id: string, prefix: string): boolean {
  if (!id.startsWith(prefix) || id.length !== prefix.length + LENGTH) return false;
  for (let i = prefix.length; i < id.length; i++) {
    if (!ALPHABET.includes(id[i]!)) return false;
  }
  return true;
}

/**
 * When id `id` (made by `newId`) was made, in epoch ms; null for a string of another shape
 * (ids made elsewhere: tests, imports).
 */
export function idTimeMs(id: string, prefix: string): number | null {
  if (!looksLikeId(id, prefix)) return null;
  let value = 0n;
  for (const c of id.slice(prefix.length)) value = value * 62n + BigInt(ALPHABET.indexOf(c));
  return Number(value >> 80n);
}
