import { expect, test } from "vitest";
import { toHtmlString } from "./html.ts";
import { boundedJson, clippedText, payloadView } from "./payload-view.ts";

const nested = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;

test("small JSON comes out indented as JSON.stringify(…, null, 2) does", () => {
  const doc = { a: 1, b: [1, 2, { c: 'x"y\\z' }], e: {}, f: [], g: null, h: true, i: -1.5e3 };
  const v = boundedJson(JSON.stringify(doc));
  expect(v).toEqual({
    text: JSON.stringify(doc, null, 2),
    collapsed: 0,
    cut: 0,
    restBytes: 0,
  });
  // whitespace in the source makes no difference
  expect(boundedJson(JSON.stringify(doc, null, 7)).text).toBe(JSON.stringify(doc, null, 2));
});

test("deeper than maxDepth is collapsed, without recursion, at any depth", () => {
  for (const depth of [40, 10_000, 1_000_000]) {
    const v = boundedJson(nested(depth), { maxDepth: 32 });
    expect(v.collapsed).toBe(1);
    expect(v.restBytes).toBe(0);
    expect(v.text.split("\n")).toHaveLength(32 * 2 + 1);
    expect(v.text).toContain('"a": {…}');
  }
  const arrays = boundedJson(`${"[".repeat(50_000)}${"]".repeat(50_000)}`, { maxDepth: 3 });
  expect(arrays.text).toBe("[\n  [\n    [\n      […]\n    ]\n  ]\n]");
  // exactly maxDepth levels are shown in full
  expect(boundedJson(nested(3), { maxDepth: 3 }).collapsed).toBe(0);
});

test("a wide document stops at maxChars and says how many bytes are left", () => {
  const doc = Object.fromEntries(
    Array.from({ length: 20_000 }, (_, i) => [`k${i}`, "é".repeat(20)]),
  );
  const json = JSON.stringify(doc);
  const v = boundedJson(json, { maxChars: 10_000 });
  expect(v.text.length).toBeLessThan(10_000 + 100);
  expect(v.text.startsWith('{\n  "k0": "')).toBe(true);
  expect(v.restBytes).toBeGreaterThan(0);
  // the rest is the source after what is shown, to the byte
  const shown = v.text.replace(/\n */g, "").replaceAll(": ", ":");
  expect(json.startsWith(shown)).toBe(true);
  expect(v.restBytes).toBe(Buffer.byteLength(json) - Buffer.byteLength(shown));
});

test("long strings and numbers are cut, never inside an escape or a surrogate pair", () => {
  const long = `${"x".repeat(9)}\\u00e9${"y".repeat(100)}`;
  const v = boundedJson(`["${long}", ${"9".repeat(500)}]`, { maxTokenChars: 12 });
  expect(v.cut).toBe(2);
  expect(v.text).toBe(`[\n  "${"x".repeat(9)}…",\n  ${"9".repeat(12)}…\n]`);
  const emoji = boundedJson(JSON.stringify(["ab😀😀😀😀"]), { maxTokenChars: 4 });
  expect(emoji.text).toBe('[\n  "ab…"\n]');
});

test("text that is not JSON is shown, bounded, without throwing", () => {
  for (const junk of ['{"a": "unterminated', "]]]}}}", "<script>", "\u0000\ud800", "{{{{"]) {
    const v = boundedJson(junk.repeat(10_000), { maxChars: 1_000, maxDepth: 5 });
    expect(v.text.length).toBeLessThan(1_000 + 2_100);
  }
});

test("the page block escapes, notes what is left out and links the raw payload", () => {
  const page = toHtmlString(
    payloadView(`{"x":"<b>",${'"a":['.repeat(50)}1${"]".repeat(50)}}`, 999_999, "/p?x=1&y=2"),
  );
  expect(page).toContain("&lt;b&gt;");
  expect(page).toContain("nested deeper than 32 levels");
  expect(page).toContain('href="/p?x=1&amp;y=2"');
  expect(page).toContain("999,999 bytes");
  expect(toHtmlString(payloadView('{"a":1}', 7, "/p"))).not.toContain("payload-elided");
});

test("clippedText keeps short texts and says how much a long one lost", () => {
  expect(clippedText("short", 10)).toBe("short");
  expect(clippedText("x".repeat(25), 10)).toBe(`${"x".repeat(10)}… (15 more characters)`);
  expect(clippedText(`${"x".repeat(9)}😀`, 10)).toBe(`${"x".repeat(9)}… (2 more characters)`);
});
