import { describe, expect, test } from "vitest";
import { formBody } from "./form-body.ts";
import { payloadFields } from "./payload-fields.ts";
import {
  encodeFor,
  parseUrlTemplate,
  type RenderInput,
  renderUrlTemplate,
  sampleUrl,
  UrlTemplateError,
} from "./url-template.ts";

const input = (payload: string, extra: Partial<RenderInput> = {}): RenderInput => ({
  payload,
  messageId: "msg_2x",
  eventType: "conversion.approved",
  eventId: "evt-7",
  attempt: 2,
  timestamp: 1_700_000_000,
  token: null,
  ...extra,
});
const sensitive = (name: string) => ["click_id", "token", "email", "card"].includes(name);
const render = (
  url: string,
  payload: string,
  extra: Partial<RenderInput> = {},
  missing: "fail" | "empty" = "fail",
) => renderUrlTemplate(parseUrlTemplate(url), input(payload, extra), { missing, sensitive });

function positionOf(url: string): number {
  try {
    parseUrlTemplate(url);
  } catch (err) {
    if (err instanceof UrlTemplateError) return err.position;
    throw err;
  }
  return -1;
}

describe("parsing", () => {
  test("text and placeholders in order, path and query places, origin literal", () => {
    const t = parseUrlTemplate(
      "https://t.example:8443/p/{user.id}/x?cid={click_id}&m={$message_id}#top",
    );
    expect(t.origin).toBe("https://t.example:8443");
    expect(t.parts).toEqual([
      { kind: "text", text: "/p/" },
      { kind: "field", path: ["user", "id"], source: "{user.id}", place: "path" },
      { kind: "text", text: "/x?cid=" },
      { kind: "field", path: ["click_id"], source: "{click_id}", place: "query" },
      { kind: "text", text: "&m=" },
      { kind: "builtin", name: "message_id", source: "{$message_id}", place: "query" },
    ]);
    expect(t.fragment).toBe("#top");
    expect(t.usesToken).toBe(false);
    expect(parseUrlTemplate("https://t.example/{$token}/pb").usesToken).toBe(true);
    expect(sampleUrl(t)).toBe("https://t.example:8443/p/x/x?cid=x&m=x#top");
  });

  test("refusals carry the position (from 1) of what is wrong", () => {
    expect(positionOf("https://t.example/pb?a={$nope}")).toBe(24);
    expect(() => parseUrlTemplate("https://t.example/pb?a={$nope}")).toThrow(
      /unknown built-in \{\$nope\}/,
    );
    // scheme, host and port are literal
    expect(positionOf("https://{host}/pb")).toBe(9);
    expect(positionOf("https://t.example:{port}/pb")).toBe(19);
    expect(positionOf("https://t{x}.example/pb")).toBe(10);
    expect(positionOf("{scheme}://t.example/pb")).toBe(1);
    expect(() => parseUrlTemplate("https://{host}/pb")).toThrow(/must be literal/);
    // braces that do not pair, names that are not fields, the fragment
    expect(positionOf("https://t.example/pb?a={click_id")).toBe(24);
    expect(positionOf("https://t.example/pb?a={a{b}")).toBe(24);
    expect(positionOf("https://t.example/pb?a=b}")).toBe(25);
    expect(positionOf("https://t.example/pb?a={}")).toBe(24);
    expect(positionOf("https://t.example/pb?a={a b}")).toBe(24);
    expect(positionOf("https://t.example/pb?a={a..b}")).toBe(24);
    expect(positionOf("https://t.example/pb#{x}")).toBe(22);
    expect(positionOf("https://t.example/pb?a={x}#b}")).toBe(29);
    // a % must start a percent-encoded byte
    expect(positionOf("https://t.example/pb?a=5%zz&c={x}")).toBe(25);
    expect(positionOf("https://t.example/pb?a={x}%")).toBe(27);
    expect(parseUrlTemplate("https://t.example/p%2Fq?a={x}%25").parts[0]).toEqual({
      kind: "text",
      text: "/p%2Fq?a=",
    });
    // positions count characters: an emoji before the mistake is one
    expect(positionOf("https://t.example/😀/{$nope}")).toBe(21);
  });
});

test("literal text a URL cannot hold is encoded as a URL parser would; the host is put in the form a request needs", () => {
  const t = parseUrlTemplate("https://BÜCHER.example:443/a b/ü😀?q=x y&c={click_id}%20");
  expect(t.origin).toBe("https://xn--bcher-kva.example");
  expect(sampleUrl(t)).toBe(
    "https://xn--bcher-kva.example/a%20b/%C3%BC%F0%9F%98%80?q=x%20y&c=x%20",
  );
  expect(positionOf("https://exa mple.com/{x}")).toBe(9);
});

describe("rendering", () => {
  test("the fragment is never sent, nor stored as part of the attempt's URL", () => {
    const r = render("https://t.example/pb?sub={sub}#section-2", '{"sub":"c1"}');
    expect(r).toMatchObject({ ok: true, path: "/pb?sub=c1", shown: "https://t.example/pb?sub=c1" });
  });

  test("values encoded for the place they stand in; numbers keep the producer's text", () => {
    const payload =
      '{"click_id":"a b&c=d/e?f#g+h","payout":99.50,"big":12345678901234567890,"user":{"id":"../x"},"ok":true,"items":[{"sku":"S/1"}]}';
    const r = render(
      "https://t.example/u/{user.id}/{items.0.sku}?cid={click_id}&payout={payout}&big={big}&ok={ok}",
      payload,
    );
    expect(r).toMatchObject({
      ok: true,
      path: "/u/..%2Fx/S%2F1?cid=a%20b%26c%3Dd%2Fe%3Ff%23g%2Bh&payout=99.50&big=12345678901234567890&ok=true",
    });
  });

  test("a path segment of only dots cannot become a dot segment; unicode is UTF-8 percent-encoded", () => {
    expect(encodeFor("path", "..")).toBe("%2E%2E");
    expect(encodeFor("query", "..")).toBe("..");
    expect(encodeFor("query", "grüße ✓")).toBe("gr%C3%BC%C3%9Fe%20%E2%9C%93");
    expect(encodeFor("query", "(it's)!*")).toBe("%28it%27s%29%21%2A");
    // a lone surrogate (valid JSON, not valid in a URL) does not throw
    expect(encodeFor("query", "\ud800")).toBe("%EF%BF%BD");
  });

  test("built-ins: message id, event type, event id, attempt, timestamp, token", () => {
    const r = render(
      "https://t.example/{$token}/pb?m={$message_id}&e={$event_type}&id={$event_id}&n={$attempt}&ts={$timestamp}",
      "{}",
      { token: "k/ey 1" },
    );
    expect(r).toMatchObject({
      ok: true,
      path: "/k%2Fey%201/pb?m=msg_2x&e=conversion.approved&id=evt-7&n=2&ts=1700000000",
    });
  });

  test("the shown URL masks the token and sensitive fields; the secrets list has them raw and encoded", () => {
    const r = render(
      "https://t.example/{$token}/pb?cid={click_id}&payout={payout}&mail={user.email}",
      '{"click_id":"abc123","payout":"5","user":{"email":"a@b.example"}}',
      { token: "s3cr3t/t" },
    );
    expect(r).toEqual({
      ok: true,
      path: "/s3cr3t%2Ft/pb?cid=abc123&payout=5&mail=a%40b.example",
      shown: "https://t.example/***/pb?cid=***&payout=5&mail=***",
      secrets: ["s3cr3t/t", "s3cr3t%2Ft", "abc123", "abc123", "a@b.example", "a%40b.example"],
    });
  });

  test("a sensitive name anywhere on a field's path masks it", () => {
    const r = render(
      "https://t.example/pb?n={card.number}",
      '{"card":{"number":"4111111111111111"}}',
    );
    expect(r).toMatchObject({ ok: true, shown: "https://t.example/pb?n=***" });
  });

  test("a missing, null or nested value fails by default, naming the placeholder; 'empty' renders missing ones empty", () => {
    expect(render("https://t.example/pb?cid={click_id}", '{"other":1}')).toEqual({
      ok: false,
      placeholder: "{click_id}",
      why: "has no value in this message",
    });
    expect(render("https://t.example/pb?cid={click_id}", '{"click_id":null}')).toMatchObject({
      ok: false,
    });
    expect(render("https://t.example/pb?id={$event_id}", "{}", { eventId: null })).toMatchObject({
      ok: false,
      placeholder: "{$event_id}",
    });
    expect(render("https://t.example/pb?u={user}", '{"user":{"id":1}}', {}, "empty")).toMatchObject(
      {
        ok: false,
        why: "is an object or array, not a value",
      },
    );
    expect(
      render("https://t.example/pb?cid={click_id}&p={payout}", '{"payout":1}', {}, "empty"),
    ).toMatchObject({
      ok: true,
      path: "/pb?cid=&p=1",
    });
    // the path through a non-object is missing, not an error
    expect(render("https://t.example/pb?x={a.b.c}", '{"a":"str"}')).toMatchObject({ ok: false });
  });
});

describe("payload fields and form bodies", () => {
  test("lookups read the producer's text: escapes decoded, repeated keys take the last value", () => {
    const f = payloadFields(
      ' { "a" : { "b\\u0031" : [ 1 , "x\\"y" , -0.0e+1 ] }, "k": 1, "k": 2 } ',
    );
    expect(f.get(["a", "b1", "1"])).toEqual({ kind: "text", text: 'x"y' });
    expect(f.get(["a", "b1", "2"])).toEqual({ kind: "text", text: "-0.0e+1" });
    expect(f.get(["a", "b1", "3"])).toEqual({ kind: "missing" });
    expect(f.get(["a", "b1"])).toEqual({ kind: "composite", raw: '[ 1 , "x\\"y" , -0.0e+1 ]' });
    expect(f.get(["k"])).toEqual({ kind: "text", text: "2" });
    expect(payloadFields("[1,2]").topLevel()).toBeNull();
  });

  test("a form body from the top-level fields: numbers as sent, null empty, nested as JSON", () => {
    expect(
      formBody(
        '{"click_id":"a b+c","payout":99.50,"paid":true,"note":null,"meta":{"x":[1]},"é":"~*"}',
      ),
    ).toBe(
      "click_id=a+b%2Bc&payout=99.50&paid=true&note=&meta=%7B%22x%22%3A%5B1%5D%7D&%C3%A9=%7E*",
    );
    expect(formBody('"just a string"')).toBeNull();
    // the same text the platform's form serializer gives for string values
    const fields = { a: "x y&z=1", b: "~!'()*", c: "ü" };
    expect(formBody(JSON.stringify(fields))).toBe(new URLSearchParams(fields).toString());
  });
});
