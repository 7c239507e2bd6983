import { randomBytes } from "node:crypto";
import { expect, test } from "vitest";
import { makeSecretBox } from "./secret-box.ts";

const key = () => randomBytes(32).toString("base64");

test("seals with AES-256-GCM, opens with the current or a previous key, detects tampering", () => {
  const [k1, k2] = [key(), key()];
  const box1 = makeSecretBox(k1);
  const sealed = box1.seal("whsec_abc");
  expect(sealed).toMatch(/^enc:v1:[0-9a-f]{8}:/);
  expect(sealed).not.toContain("whsec_abc");
  expect(box1.seal("whsec_abc")).not.toBe(sealed); // fresh IV each time
  expect(box1.open(sealed)).toBe("whsec_abc");
  expect(box1.open("whsec_plain")).toBe("whsec_plain");

  const rotated = makeSecretBox(k2, [k1]);
  expect(rotated.open(sealed)).toBe("whsec_abc");
  expect(rotated.needsReseal(sealed)).toBe(true);
  expect(rotated.needsReseal(rotated.seal("x"))).toBe(false);
  expect(rotated.needsReseal("whsec_plain")).toBe(true);

  expect(() => makeSecretBox(k2).open(sealed)).toThrow(/HOOKRELAY_ENCRYPTION_KEY/);
  const tampered = sealed.slice(0, -4) + (sealed.endsWith("AAAA") ? "BBBB" : "AAAA");
  expect(() => box1.open(tampered)).toThrow();
});

test("without a key nothing is sealed; bad keys are refused at start", () => {
  const plain = makeSecretBox(undefined);
  expect(plain.encrypting).toBe(false);
  expect(plain.seal("whsec_x")).toBe("whsec_x");
  expect(() => makeSecretBox("short")).toThrow(/32 bytes/);
  expect(makeSecretBox("ab".repeat(32)).encrypting).toBe(true);
});
