/**
 * The affiliate trackers' postback URL formats in README.md (Postbacks), each rendered from
 * a sample payload as a worker renders it: a test fails if one stops rendering to what the
 * tracker expects, and the last one fails if the README lists a template not rendered here.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { DEFAULT_SENSITIVE_FIELDS, makeRedactor } from "../security/redact.ts";
import { parseUrlTemplate, type RenderInput, renderUrlTemplate } from "./url-template.ts";

const redactor = makeRedactor(DEFAULT_SENSITIVE_FIELDS);
const message = (payload: string, token: string | null = null): RenderInput => ({
  payload,
  messageId: "msg_2bTq8",
  eventType: "conversion.approved",
  eventId: "order-1042",
  attempt: 1,
  timestamp: 1_760_000_000,
  token,
});
/** the templates the tests below rendered */
const rendered = new Set<string>();
function render(url: string, input: RenderInput) {
  rendered.add(url);
  const r = renderUrlTemplate(parseUrlTemplate(url), input, {
    missing: "fail",
    sensitive: redactor.isSensitive,
  });
  if (!r.ok) throw new Error(`${r.placeholder} ${r.why}`);
  return { url: parseUrlTemplate(url).origin + r.path, shown: redactor.url(r.shown) };
}

describe("tracker postback formats", () => {
  test("Voluum: cid (the click id), payout, txid", () => {
    const r = render(
      "https://trk.example.com/postback?cid={click_id}&payout={payout}&txid={transaction_id}",
      message('{"click_id":"VXK2Q9LM3PA","payout":12.50,"transaction_id":"order-1042"}'),
    );
    expect(r.url).toBe(
      "https://trk.example.com/postback?cid=VXK2Q9LM3PA&payout=12.50&txid=order-1042",
    );
    expect(r.shown).toBe("https://trk.example.com/postback?cid=***&payout=12.50&txid=***");
  });

  test("Keitaro: the postback key in the path, subid, status, payout, tid", () => {
    const r = render(
      "https://keitaro.example.com/{$token}/postback?subid={subid}&status={status}&payout={payout}&tid={$event_id}",
      message('{"subid":"3kd8a0q1","status":"sale","payout":"7.00"}', "a1b2c3d4"),
    );
    expect(r.url).toBe(
      "https://keitaro.example.com/a1b2c3d4/postback?subid=3kd8a0q1&status=sale&payout=7.00&tid=order-1042",
    );
    expect(r.shown).toBe(
      "https://keitaro.example.com/***/postback?subid=***&status=sale&payout=7.00&tid=***",
    );
  });

  test("Binom: click.php with cnv_id, payout, cnv_status", () => {
    const r = render(
      "https://binom.example.com/click.php?cnv_id={clickid}&payout={payout}&cnv_status={status}",
      message('{"clickid":"e2f3he2tfe65a1","payout":5,"status":"approve d"}'),
    );
    expect(r.url).toBe(
      "https://binom.example.com/click.php?cnv_id=e2f3he2tfe65a1&payout=5&cnv_status=approve%20d",
    );
    expect(r.shown).toBe(
      "https://binom.example.com/click.php?cnv_id=***&payout=5&cnv_status=approve%20d",
    );
  });

  test("Everflow: a constant nid, transaction_id, amount", () => {
    const r = render(
      "https://www.ef-track.example.com/?nid=1234&transaction_id={transaction_id}&amount={sale.amount}",
      message('{"transaction_id":"7f3c2a9e0b","sale":{"amount":49.90}}'),
    );
    expect(r.url).toBe(
      "https://www.ef-track.example.com/?nid=1234&transaction_id=7f3c2a9e0b&amount=49.90",
    );
    expect(r.shown).toBe(
      "https://www.ef-track.example.com/?nid=1234&transaction_id=***&amount=49.90",
    );
  });

  test("every template of the README's tracker list is rendered above", () => {
    const readme = readFileSync(path.join(import.meta.dirname, "../../README.md"), "utf8");
    const start = readme.indexOf("### Trackers' postback formats");
    const section = readme.slice(start, readme.indexOf("```", start));
    const listed = [...section.matchAll(/`(https:\/\/[^`]*\{[^`]*)`/g)].map((m) => m[1]!);
    expect(listed).toHaveLength(4);
    for (const url of listed) expect(rendered, url).toContain(url);
  });
});
