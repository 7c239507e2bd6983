import { expect, test } from "vitest";
import { checkApiKey, generateApiKey } from "./api-key-format.ts";

test("generated keys carry their kind and a checksum that catches typos", () => {
  const key = generateApiKey("admin");
  expect(key).toMatch(/^hr_admin_[0-9A-Za-z]{38}$/);
  expect(checkApiKey(key)).toBe("admin");
  expect(checkApiKey(generateApiKey("app"))).toBe("app");
  // every single-character change is caught
  const body = key.slice("hr_admin_".length);
  for (let i = 0; i < body.length; i++) {
    const c = body[i] === "a" ? "b" : "a";
    expect(checkApiKey(`hr_admin_${body.slice(0, i)}${c}${body.slice(i + 1)}`)).toBeNull();
  }
  expect(checkApiKey(key.replace("hr_admin_", "hr_app_"))).toBeNull();
  for (const junk of [
    "",
    "hr_admin_",
    `${key}x`,
    key.slice(0, -1),
    "Bearer x",
    "hr_root_".padEnd(47, "a"),
  ]) {
    expect(checkApiKey(junk)).toBeNull();
  }
  expect(new Set(Array.from({ length: 200 }, () => generateApiKey("app"))).size).toBe(200);
});
