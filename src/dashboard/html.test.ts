import { describe, expect, test } from "vitest";
import { dashboardPath, escapeHtml, html, raw, toHtmlString } from "./html.ts";

const s = (h: ReturnType<typeof html>) => toHtmlString(h);

describe("html", () => {
  test("escapes every interpolation, for text and quoted attributes", () => {
    const evil = `"><img src=x onerror=alert(1)><script>alert('x')</script>\``;
    const out = s(html`<td title="${evil}">${evil}</td>`);
    expect(out).not.toContain("<img");
    expect(out).not.toContain("<script");
    expect(out).not.toMatch(/title="[^"]*"[^>]/);
    expect(out).toBe(`<td title="${escapeHtml(evil)}">${escapeHtml(evil)}</td>`);
    expect(escapeHtml(`&<>"'\`=`)).toBe("&amp;&lt;&gt;&quot;&#39;&#96;=");
  });

  test("nested html and raw() pass through; arrays join; null, undefined and false are empty", () => {
    const items = ["<a>", "b"];
    expect(s(html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`)).toBe(
      "<ul><li>&lt;a&gt;</li><li>b</li></ul>",
    );
    expect(s(html`${raw("<br>")}${null}${undefined}${false}${0}`)).toBe("<br>0");
  });

  test("a plain object that looks like Html is escaped, not trusted", () => {
    const forged = JSON.parse('{"html":"<script>"}');
    expect(s(html`${forged}`)).toBe("[object Object]");
  });

  test("dashboardPath encodes segments and query values", () => {
    expect(dashboardPath(["endpoints", "a/../b?c"], { q: "x&y=1", empty: "", n: null })).toBe(
      "/dashboard/endpoints/a%2F..%2Fb%3Fc?q=x%26y%3D1",
    );
  });
});
