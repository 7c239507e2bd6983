/**
 * The endpoint page's "Custom headers" fact (pages/endpoint.ts): the headers sent with
 * every delivery as GET .../endpoint/{ep}/headers answers them, the values of sensitive
 * ones masked by the API (security/sensitive-headers.ts), never read from the row here.
 */
import type { ReadResponse } from "../api/in-process.ts";
import { dash } from "./format.ts";
import { type Html, html } from "./html.ts";

type HeadersAnswer = ReadResponse<"/api/v1/app/:appId/endpoint/:endpointId/headers">;

export function headersFacts(answer: HeadersAnswer): Html {
  const entries = Object.entries(answer.headers);
  return html`<dt>Custom headers</dt><dd data-testid="custom-headers">${
    entries.length === 0
      ? dash
      : entries.map(
          ([name, value], i) =>
            html`${i > 0 ? html`<br>` : ""}<code>${name}: ${value}</code>${
              answer.sensitive.includes(name)
                ? html` <span class="muted">(sensitive, masked)</span>`
                : ""
            }`,
        )
  }</dd>`;
}
