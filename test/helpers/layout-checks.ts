/**
 * Layout checks of a dashboard or portal page in Chromium (test/layout-browser.test.ts):
 * what a person would see as broken, measured from element boxes. Each problem is a
 * sentence naming the element; none is a clean page.
 *
 * - a card's label and value overlap or touch ("P501 ms", "ATTEMPTS817");
 * - a card or a form's block (a field's paragraph, a fieldset, a grid cell) is wider than
 *   its box shows (scrollWidth > clientWidth: something cut off or spilling out);
 * - a select is narrower than its chosen option's words (the words cut off);
 * - a checkbox with a short label is not on one line with its words;
 * - a short ordering key (blocked-keys table) wraps;
 * - the page scrolls sideways.
 *
 * The checks run in the page as a script (this project's TypeScript has no DOM types).
 */
import type { Page } from "playwright-core";

const CHECKS = `(() => {
  const problems = [];
  const name = (el) => {
    const text = (el.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 40);
    return el.tagName.toLowerCase() + (el.className ? "." + String(el.className).replace(/ /g, ".") : "") + (text ? ' "' + text + '"' : "");
  };
  const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };

  for (const card of document.querySelectorAll(".card")) {
    const label = card.querySelector(".label");
    const value = card.querySelector(".value");
    if (!label || !value || !visible(card)) continue;
    const a = label.getBoundingClientRect();
    const b = value.getBoundingClientRect();
    const apartV = b.top >= a.bottom + 2 || a.top >= b.bottom + 2;
    const apartH = b.left >= a.right + 4 || a.left >= b.right + 4;
    if (!apartV && !apartH) problems.push("card label and value run together: " + name(card));
  }

  const blocks = document.querySelectorAll(
    ".card, .card .label, .card .value, form p, form fieldset, .form-grid > *, dl.facts dd, th"
  );
  for (const el of blocks) {
    if (!visible(el)) continue;
    if (el.scrollWidth > el.clientWidth + 1) problems.push("cut off or spilling (" + el.scrollWidth + " > " + el.clientWidth + " px): " + name(el));
  }

  const ctx = document.createElement("canvas").getContext("2d");
  for (const select of document.querySelectorAll("select")) {
    if (!visible(select)) continue;
    const style = getComputedStyle(select);
    ctx.font = style.font;
    const words = select.selectedOptions[0] ? select.selectedOptions[0].textContent : "";
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 18;
    const need = ctx.measureText(words).width;
    if (need > room) problems.push("select cuts its words (" + Math.round(need) + " > " + Math.round(room) + " px): " + name(select.closest("label") || select));
  }

  for (const box of document.querySelectorAll("label > input[type=checkbox], label > input[type=radio]")) {
    const label = box.parentElement;
    if (!visible(box) || (label.textContent || "").trim().length > 30) continue;
    if (box.getBoundingClientRect().width > 30 || label.getClientRects().length !== 1)
      problems.push("checkbox not in line with its words: " + name(label));
  }

  for (const key of document.querySelectorAll("td.key code")) {
    if (visible(key) && (key.textContent || "").length <= 32 && key.getClientRects().length !== 1)
      problems.push("a short key wraps: " + name(key));
  }

  const sideways = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  if (sideways > 1) problems.push("the page scrolls sideways by " + sideways + " px");
  return problems;
})()`;

/** What is broken in the page's layout, in sentences (see the module comment). */
export const layoutProblems = (page: Page): Promise<string[]> => page.evaluate(CHECKS);
