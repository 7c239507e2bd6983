/**
 * A message id of millisecond `ms` whose 80 random bits are `random`. src/ids.ts's newId
 * never goes back in time within a process (it keeps ids rising), so an id of a past
 * millisecond, in a vitest worker that made ids of now for an earlier file, is made here.
 */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function messageIdAt(ms: number, random = 0n): string {
  let value = (BigInt(ms) << 80n) | random;
  let out = "";
  for (let i = 0; i < 22; i++) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return `msg_${out}`;
}
