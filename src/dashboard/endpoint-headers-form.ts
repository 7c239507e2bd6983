/**
 * The custom headers part of the dashboard's endpoint edit form (docs/dashboard.md,
 * "Editing an endpoint"): one `Name: value` a line, as GET .../headers answers them, so a
 * sensitive value shows as `***`; a `***` posted back keeps the stored value (the API's
 * PUT .../headers does that, api/endpoint-headers-input.ts). The field posts beside a
 * marker, so a form that does not show it changes no header.
 */
import { field } from "./form-body.ts";
import { type Html, html } from "./html.ts";

const MARKER = "headersField";

/** The headers as the textarea shows them. */
export function headersText(headers: Readonly<Record<string, string>>): string {
  return Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join("\n");
}

/** The fieldset: open when the endpoint has headers. */
export function headersFieldset(text: string): Html {
  return html`<details class="settings"${text ? html` open` : ""}><summary>Custom headers <span class="muted">(sent with every delivery)</span></summary>
<input type="hidden" name="${MARKER}" value="1">
<p><label>One <code>Name: value</code> a line<br><textarea name="headers" rows="4" cols="60" maxlength="140000" spellcheck="false" data-testid="headers-field">${text}</textarea></label><br>
<span class="muted">Sensitive values (Authorization, tokens, keys) show as <code>***</code>; leave <code>***</code> to keep the stored value. An empty field removes every header.</span></p>
</details>`;
}

/** The posted headers text, or null when the form did not show the field. */
export function headersTextOfForm(body: unknown): string | null {
  return field(body, MARKER) === "1" ? field(body, "headers") : null;
}

/** The headers of the text, or the reason it cannot be read. */
export function parseHeadersText(text: string): Record<string, string> | { error: string } {
  const headers: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue;
    const colon = line.indexOf(":");
    if (colon <= 0) return { error: `Custom headers, line ${i + 1}: write it as Name: value` };
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}
