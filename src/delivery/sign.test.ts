import { Webhook } from "standardwebhooks";
import { describe, expect, test } from "vitest";
import { generateSecret, InvalidSecretError, secretKey, signatureHeader, signOne } from "./sign.ts";

describe("signatures", () => {
  test("match the Standard Webhooks known-answer vector", () => {
    const key = secretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
    expect(signOne(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}')).toBe(
      "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    );
  });

  test("verify with the standardwebhooks library, for every secret during a rotation", () => {
    const [a, b] = [generateSecret(), generateSecret()];
    const ts = Math.floor(Date.now() / 1000);
    const body = '{"z":1,"a":[true,null]}';
    const header = signatureHeader([secretKey(a), secretKey(b)], "msg_1", ts, body);
    expect(header.split(" ")).toHaveLength(2);
    const headers = {
      "webhook-id": "msg_1",
      "webhook-timestamp": String(ts),
      "webhook-signature": header,
    };
    for (const secret of [a, b])
      expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(generateSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(a).verify(`${body} `, headers)).toThrow();
  });

  test("secrets are validated", () => {
    expect(generateSecret()).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secretKey("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")).toHaveLength(24); // prefix optional
    expect(() => secretKey("whsec_c2hvcnQ=")).toThrow(InvalidSecretError); // 5 bytes
    expect(() => secretKey("whsec_not base64!!")).toThrow(InvalidSecretError);
    expect(() => secretKey(`whsec_${Buffer.alloc(65).toString("base64")}`)).toThrow(/24-64 bytes/);
  });
});
