/**
 * The OAuth2 part of the endpoint form (docs/oauth2.md), for the dashboard and the portal:
 * token URL, client id, client secret, scope, audience and auth method. The secret never
 * goes to the browser: the form says whether one is set, and an empty secret field keeps it
 * (the API's `***`). An empty token URL removes OAuth2.
 *
 * A post changes OAuth2 only when the form showed these fields (`oauth2Fields`), so a form
 * or client that never did leaves them alone.
 */
import { field } from "./form-body.ts";
import { type Html, html } from "./html.ts";

export interface OAuth2FormValues {
  tokenUrl: string;
  clientId: string;
  hasSecret: boolean;
  scope: string;
  audience: string;
  authMethod: string;
}

export const NO_OAUTH2: OAuth2FormValues = {
  tokenUrl: "",
  clientId: "",
  hasSecret: false,
  scope: "",
  audience: "",
  authMethod: "client_secret_basic",
};

const METHODS: ReadonlyArray<readonly [string, string]> = [
  ["client_secret_basic", "HTTP Basic header (client_secret_basic)"],
  ["client_secret_post", "form fields (client_secret_post)"],
];

const text = (v: unknown): string => (typeof v === "string" ? v : "");

/** The fields of an endpoint as the API shows it. */
export function oauth2ValuesOfEndpoint(e: Record<string, unknown>): OAuth2FormValues {
  const o = e.oauth2 as Record<string, unknown> | null | undefined;
  if (!o) return NO_OAUTH2;
  return {
    tokenUrl: text(o.tokenUrl),
    clientId: text(o.clientId),
    hasSecret: typeof o.clientSecret === "string",
    scope: text(o.scope),
    audience: text(o.audience),
    authMethod: text(o.authMethod) || "client_secret_basic",
  };
}

/** The fields as posted (to show the form again after a refusal; never the secret). */
export function oauth2ValuesOfForm(body: unknown): OAuth2FormValues {
  return {
    tokenUrl: field(body, "oauthTokenUrl").trim(),
    clientId: field(body, "oauthClientId").trim(),
    hasSecret: field(body, "hadOauthSecret") === "1",
    scope: field(body, "oauthScope").trim(),
    audience: field(body, "oauthAudience").trim(),
    authMethod: field(body, "oauthAuthMethod") || "client_secret_basic",
  };
}

/** The API fields a post stands for: none unless the form showed them. */
export function oauth2BodyOfForm(body: unknown): Record<string, unknown> {
  if (field(body, "oauth2Fields") !== "1") return {};
  const v = oauth2ValuesOfForm(body);
  if (v.tokenUrl === "") return { oauth2: null };
  const secret = field(body, "oauthClientSecret");
  return {
    oauth2: {
      tokenUrl: v.tokenUrl,
      clientId: v.clientId,
      // (empty: keep the stored one; the API refuses *** where none is stored)
      clientSecret: secret === "" ? "***" : secret,
      scope: v.scope || null,
      audience: v.audience || null,
      authMethod: v.authMethod,
    },
  };
}

/** The form's OAuth2 section. */
export function oauth2Fieldset(v: OAuth2FormValues): Html {
  return html`<details class="settings"${v.tokenUrl !== "" ? html` open` : ""}><summary>OAuth2 client credentials</summary>
<input type="hidden" name="oauth2Fields" value="1">
<input type="hidden" name="hadOauthSecret" value="${v.hasSecret ? "1" : "0"}">
<p class="muted">Each request carries <code>Authorization: Bearer</code> with a token from the token URL (client-credentials grant). An empty token URL removes OAuth2.</p>
<div class="form-grid">
<p><label>Token URL<br><input type="url" name="oauthTokenUrl" maxlength="2048" size="40" value="${v.tokenUrl}" placeholder="https://auth.example/oauth/token"></label></p>
<p><label>Client id<br><input type="text" name="oauthClientId" maxlength="1024" value="${v.clientId}"></label></p>
<p><label>Client secret<br><input type="password" name="oauthClientSecret" maxlength="4096" autocomplete="off" value="" placeholder="${v.hasSecret ? "set: leave empty to keep it" : "none"}"></label></p>
<p><label>Client authentication<br><select name="oauthAuthMethod">${METHODS.map(
    ([value, label]) =>
      html`<option value="${value}"${value === v.authMethod ? html` selected` : ""}>${label}</option>`,
  )}</select></label></p>
<p><label>Scope<br><input type="text" name="oauthScope" maxlength="1024" value="${v.scope}" placeholder="none"></label></p>
<p><label>Audience<br><input type="text" name="oauthAudience" maxlength="1024" value="${v.audience}" placeholder="none"></label></p>
</div>
</details>`;
}

/** Whether the endpoint uses OAuth2, as a row of a <dl> (detail pages); never the secret. */
export function oauth2Facts(e: Record<string, unknown>): Html {
  const v = oauth2ValuesOfEndpoint(e);
  if (v.tokenUrl === "") return html`<dt>OAuth2</dt><dd data-testid="oauth2">not configured</dd>`;
  return html`<dt>OAuth2</dt><dd data-testid="oauth2">client <code>${v.clientId}</code> at <code>${v.tokenUrl}</code>${
    v.scope ? html`, scope <code>${v.scope}</code>` : ""
  }; secret ${v.hasSecret ? "set" : "missing"}</dd>`;
}
