import { describe, expect, test } from "vitest";
import { makeRedactor } from "./redact.ts";
import { isSensitiveHeader, maskedHeaders } from "./sensitive-headers.ts";

describe("sensitive endpoint headers", () => {
  test("Svix's list, Cookie and credential words are sensitive, in any case and spelling", () => {
    for (const name of [
      "Authorization",
      "proxy-authorization",
      "WWW-Authenticate",
      "X-Auth-Token",
      "Cookie",
      "X-Api-Key",
      "x_access_token",
      "X-Client-Secret",
      "X-Shopify-Hmac-Signature",
      "X-Session-Id",
      "X-Password",
      "X-Credentials",
    ])
      expect(isSensitiveHeader(name), name).toBe(true);
    for (const name of ["X-Team", "Accept", "User-Agent", "X-Region", "X-Request-Id"])
      expect(isSensitiveHeader(name), name).toBe(false);
  });

  test("the redaction list (HOOKRELAY_SENSITIVE_FIELDS) names more", () => {
    const redactor = makeRedactor(["tenant_ref"]);
    expect(isSensitiveHeader("Tenant-Ref", redactor.isSensitive)).toBe(true);
    expect(isSensitiveHeader("Tenant-Ref")).toBe(false);
  });

  test("masked: every header kept, sensitive values replaced and their names listed", () => {
    expect(maskedHeaders({ "X-Team": "a", Authorization: "Bearer x", Cookie: "s=1" })).toEqual({
      headers: { "X-Team": "a", Authorization: "***", Cookie: "***" },
      sensitive: ["Authorization", "Cookie"],
    });
    expect(maskedHeaders({})).toEqual({ headers: {}, sensitive: [] });
  });
});
