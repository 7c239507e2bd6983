import { expect, test } from "vitest";
import { MASK, makeRedactor } from "./redact.ts";

const r = makeRedactor();

test("masks sensitive fields in JSON, query strings, form bodies and emails", () => {
  expect(
    r.text('{"click_id":"abc123","amount":5,"Email":"x@y.io","card_number":4111111111111111}'),
  ).toBe(`{"click_id":"${MASK}","amount":5,"Email":"${MASK}","card_number":"${MASK}"}`);
  expect(r.text("cid=XYZ&payout=3&transaction-id=T9")).toBe(
    `cid=${MASK}&payout=3&transaction-id=${MASK}`,
  );
  expect(r.text("invalid address jane.doe+1@example.com in request")).toBe(
    `invalid address ${MASK} in request`,
  );
  expect(r.text("nothing sensitive here: status=500")).toBe("nothing sensitive here: status=500");
});

test("masks sensitive query parameters of URLs and passwords in them", () => {
  expect(r.url("https://t.example/pb?cid=abc&payout=1.5&gclid=G")).toBe(
    `https://t.example/pb?cid=${MASK}&payout=1.5&gclid=${MASK}`,
  );
  expect(r.url("https://u:pw@t.example/x")).toBe(`https://u:${MASK}@t.example/x`);
  expect(r.url("https://t.example/plain?x=1")).toBe("https://t.example/plain?x=1");
});

test("objects: sensitive keys and strings inside values, configurable names", () => {
  expect(
    r.object({ email: "a@b.co", nested: { msg: "cid=1", n: 2 }, list: ["token=abc"] }),
  ).toEqual({
    email: MASK,
    nested: { msg: `cid=${MASK}`, n: 2 },
    list: [`token=${MASK}`],
  });
  const custom = makeRedactor(["player_id"]);
  expect(custom.text('{"player_id":"p1","cid":"c"}')).toBe(`{"player_id":"${MASK}","cid":"c"}`);
});

test("valuesIn: values of sensitive fields at any depth; none without a sensitive key; escaped keys too", () => {
  expect(
    r
      .valuesIn('{"order":{"Click-ID":"abcd1234","card":{"n":"4111111111111111"}},"amount":5}')
      .sort(),
  ).toEqual(["4111111111111111", "abcd1234"]);
  expect(r.valuesIn('{"order":{"id":"abcd1234"},"amount":5,"note":"cid=1"}')).toEqual([]);
  // a key spelled with an escape is not seen by the key scan; the document is parsed
  expect(r.valuesIn('{"pass\\u0077ord":"hunter22"}')).toEqual(["hunter22"]);
  expect(r.valuesIn("not json")).toEqual([]);
});

test("a URL template is shown as written: placeholders kept, literal sensitive values masked, nothing percent-encoded", () => {
  expect(r.url("https://t.example/pb/{$token}?payout={payout}&cid={click_id}&sub={a}{b}")).toBe(
    "https://t.example/pb/{$token}?payout={payout}&cid={click_id}&sub={a}{b}",
  );
  expect(r.url("https://t.example/pb?cid=abc{click_id}&api_key=k3y&to=a.b@example.com&n={n}")).toBe(
    `https://t.example/pb?cid=${MASK}&api_key=${MASK}&to=${MASK}&n={n}`,
  );
  expect(r.url("https://u:pw@t.example/{x}")).toBe(`https://u:${MASK}@t.example/{x}`);
  // a rendered URL (no braces) is still a URL: masked as before
  expect(r.url("https://t.example/pb?payout=12&cid=abc")).toBe(
    `https://t.example/pb?payout=12&cid=${MASK}`,
  );
});
