/**
 * The endpoint form the dashboard and the portal share (docs/dashboard.md, "Editing an
 * endpoint"): URL, description, event types, and how it is delivered: method, body format,
 * what a missing template field does, the URL token, the success rule and the signature
 * scheme (README.md, "Postbacks" and "Signing: HMAC, Ed25519 or both"). The form only
 * collects; the API's own route checks everything, so a refusal comes back as the API's
 * words.
 *
 * The URL token is never sent to the browser: the form shows whether one is set, an empty
 * token field keeps it, and "remove" clears it (as a PUT that leaves it out keeps it).
 *
 * The dashboard's form also shows the delivery policy (dashboard/endpoint-policy-form.ts);
 * both forms show egress: the pool, a proxy, mTLS (dashboard/endpoint-egress-form.ts).
 */
import { brokerDestinationText } from "../api/destination-input.ts";
import {
  type EgressFormValues,
  egressBodyOfForm,
  egressFacts,
  egressFieldset,
  egressValuesOfEndpoint,
  egressValuesOfForm,
  NO_EGRESS,
} from "./endpoint-egress-form.ts";
import {
  NO_OAUTH2,
  type OAuth2FormValues,
  oauth2BodyOfForm,
  oauth2Facts,
  oauth2Fieldset,
  oauth2ValuesOfEndpoint,
  oauth2ValuesOfForm,
} from "./endpoint-oauth2-form.ts";
import {
  type PolicyFormValues,
  policyBodyOfForm,
  policyFieldset,
  policyValuesOfEndpoint,
  policyValuesOfForm,
} from "./endpoint-policy-form.ts";
import { field, fields } from "./form-body.ts";
import { type Html, html } from "./html.ts";

export interface CatalogEntry {
  name: string;
  description: string;
  deprecated: boolean;
}

/** What the form shows. */
export interface EndpointFormValues {
  url: string;
  description: string;
  eventTypes: string[];
  method: string;
  bodyFormat: string;
  missingFields: string;
  hasToken: boolean;
  bodyContains: string[];
  bodyNotContains: string[];
  ignoreCase: boolean;
  onFailure: string;
  signatureScheme: string;
  /** the delivery policy as typed (dashboard/endpoint-policy-form.ts) */
  policy: PolicyFormValues;
  /** pool, proxy, mTLS (dashboard/endpoint-egress-form.ts) */
  egress: EgressFormValues;
  /** OAuth2 client credentials (dashboard/endpoint-oauth2-form.ts) */
  oauth2: OAuth2FormValues;
}

export const NEW_ENDPOINT: EndpointFormValues = {
  url: "",
  description: "",
  eventTypes: [],
  method: "POST",
  bodyFormat: "json",
  missingFields: "fail",
  hasToken: false,
  bodyContains: [],
  bodyNotContains: [],
  ignoreCase: false,
  onFailure: "retry",
  signatureScheme: "v1",
  policy: {},
  egress: NO_EGRESS,
  oauth2: NO_OAUTH2,
};

/**
 * The fields of an endpoint as the API shows it (api/routes/endpoints.ts, endpointOut)
 * that the form and the detail pages read; the response schema types only the common ones.
 */
export interface ShownEndpoint {
  url: string;
  description?: string | null;
  eventTypes?: string[] | null;
  method?: string;
  bodyFormat?: string;
  missingFields?: string;
  urlToken?: string | null;
  successRule?: {
    bodyContains?: string[];
    bodyNotContains?: string[];
    ignoreCase?: boolean;
    onFailure?: string;
  } | null;
  signatureScheme?: string;
  /** the rest (the delivery policy by API name: dashboard/endpoint-policy-form.ts) */
  [field: string]: unknown;
}

/** The form's values for an endpoint as the API shows it. */
export function valuesOfEndpoint(e: ShownEndpoint): EndpointFormValues {
  const rule = e.successRule ?? {};
  return {
    url: e.url,
    description: e.description ?? "",
    eventTypes: e.eventTypes ?? [],
    method: e.method ?? "POST",
    bodyFormat: e.bodyFormat ?? "json",
    missingFields: e.missingFields ?? "fail",
    hasToken: e.urlToken !== null && e.urlToken !== undefined,
    bodyContains: rule.bodyContains ?? [],
    bodyNotContains: rule.bodyNotContains ?? [],
    ignoreCase: rule.ignoreCase === true,
    onFailure: rule.onFailure ?? "retry",
    signatureScheme: e.signatureScheme ?? "v1",
    policy: policyValuesOfEndpoint(e),
    egress: egressValuesOfEndpoint(e),
    oauth2: oauth2ValuesOfEndpoint(e),
  };
}

/** One text per line, trimmed, blank lines dropped. */
const lines = (text: string): string[] =>
  text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);

/** The form's values as posted (to show the form again after a refusal). */
export function valuesOfForm(body: unknown): EndpointFormValues {
  return {
    url: field(body, "url"),
    description: field(body, "description"),
    eventTypes: fields(body, "eventTypes").filter(Boolean),
    method: field(body, "method") || "POST",
    bodyFormat: field(body, "bodyFormat") || "json",
    missingFields: field(body, "missingFields") || "fail",
    hasToken: field(body, "hadUrlToken") === "1",
    bodyContains: lines(field(body, "bodyContains")),
    bodyNotContains: lines(field(body, "bodyNotContains")),
    ignoreCase: field(body, "ignoreCase") === "on",
    onFailure: field(body, "onFailure") || "retry",
    signatureScheme: field(body, "signatureScheme") || "v1",
    policy: policyValuesOfForm(body),
    egress: egressValuesOfForm(body),
    oauth2: oauth2ValuesOfForm(body),
  };
}

/**
 * The API body a posted form stands for. Choices are passed on as given (the API refuses
 * one it does not know, with a 422 naming the field); no event type checked = all events;
 * no success-rule text = no rule.
 */
export function endpointBodyOfForm(body: unknown): Record<string, unknown> {
  const v = valuesOfForm(body);
  const out: Record<string, unknown> = {
    url: v.url,
    description: v.description,
    eventTypes: v.eventTypes.length ? [...new Set(v.eventTypes)] : null,
  };
  for (const name of ["method", "bodyFormat", "missingFields", "signatureScheme"] as const) {
    const given = field(body, name);
    if (given) out[name] = given;
  }
  const token = field(body, "urlToken");
  if (token) out.urlToken = token;
  else if (field(body, "removeUrlToken") === "on") out.urlToken = null;
  out.successRule =
    v.bodyContains.length || v.bodyNotContains.length
      ? {
          ...(v.bodyContains.length ? { bodyContains: v.bodyContains } : {}),
          ...(v.bodyNotContains.length ? { bodyNotContains: v.bodyNotContains } : {}),
          ignoreCase: v.ignoreCase,
          onFailure: v.onFailure === "permanent" ? "permanent" : "retry",
        }
      : null;
  // the delivery policy, when the form showed it
  Object.assign(out, policyBodyOfForm(body));
  // egress, when the form showed it
  Object.assign(out, egressBodyOfForm(body));
  // OAuth2, when the form showed it
  Object.assign(out, oauth2BodyOfForm(body));
  return out;
}

/** Checkboxes for the catalogue's event types (none checked = all events). */
export function eventTypePicker(catalog: CatalogEntry[], chosen: readonly string[]): Html {
  const extra = chosen.filter((c) => !catalog.some((e) => e.name === c));
  return html`<fieldset>
<legend>Event types <span class="muted">(none checked: all events)</span></legend>
${[...catalog.map((e) => e.name), ...extra].map(
  (name) =>
    html`<label><input type="checkbox" name="eventTypes" value="${name}"${chosen.includes(name) ? html` checked` : ""}> ${name}</label><br>`,
)}
</fieldset>`;
}

function select(name: string, label: string, options: [string, string][], current: string): Html {
  const known = options.some(([value]) => value === current);
  return html`<label>${label}<br><select name="${name}">${options.map(
    ([value, text]) =>
      html`<option value="${value}"${value === current ? html` selected` : ""}>${text}</option>`,
  )}${known ? "" : html`<option value="${current}" selected>${current}</option>`}</select></label>`;
}

const METHODS: [string, string][] = [
  ["POST", "POST (the payload in the body)"],
  ["GET", "GET (no body: values in the URL)"],
  ["PUT", "PUT"],
];
const BODY_FORMATS: [string, string][] = [
  ["json", "JSON, as sent"],
  ["form", "Form-encoded top-level fields"],
];
const MISSING_FIELDS: [string, string][] = [
  ["fail", "Fail it (dead letter: missing_field)"],
  ["empty", "Send the placeholder empty"],
];
const ON_FAILURE: [string, string][] = [
  ["retry", "Retry it like a 5xx"],
  ["permanent", "Fail for good (dead letter)"],
];
const SCHEMES: [string, string][] = [
  ["v1", "HMAC-SHA256 (v1, whsec_)"],
  ["v1a", "Ed25519 (v1a, whpk_ public key)"],
  ["v1+v1a", "Both"],
];

/** Is anything beyond a plain JSON POST chosen (the settings open by themselves)? */
const customised = (v: EndpointFormValues) =>
  v.method !== "POST" ||
  v.bodyFormat !== "json" ||
  v.missingFields !== "fail" ||
  v.hasToken ||
  v.bodyContains.length > 0 ||
  v.bodyNotContains.length > 0 ||
  v.signatureScheme !== "v1" ||
  v.url.includes("{");

export interface EndpointFormOptions {
  action: string;
  csrfField: string;
  csrfToken: string;
  cancelHref: string;
  values: EndpointFormValues;
  catalog: CatalogEntry[];
  /** the API's refusal of the last post, shown above the form */
  error: string | null;
  /** show the delivery policy fields (the dashboard; the portal leaves policy to the operator) */
  policy?: boolean;
  /** more fields, after the policy (the dashboard's custom headers, endpoint-headers-form.ts) */
  extra?: Html;
}

/** The add or edit form. */
export function endpointForm(o: EndpointFormOptions): Html {
  const v = o.values;
  return html`${o.error && html`<p class="error" role="alert">${o.error}</p>`}
<form method="post" action="${o.action}" class="endpoint-form">
<input type="hidden" name="${o.csrfField}" value="${o.csrfToken}">
<input type="hidden" name="hadUrlToken" value="${v.hasToken ? "1" : "0"}">
<p><label>Endpoint URL<br><input type="url" name="url" required maxlength="2048" size="60" value="${v.url}" placeholder="https://example.com/webhooks"></label><br>
<span class="muted">Or a broker: <code>amqp://user:pass@host:5672/vhost?exchange=…&amp;routingKey=…</code> (RabbitMQ) or <code>nats://user:pass@host:4222?subject=…&amp;stream=…</code> (NATS JetStream); its password shows as <code>***</code>, which keeps it.</span><br>
<span class="muted">A postback URL may hold placeholders: <code>{click_id}</code> or <code>{user.id}</code> from the payload, <code>{$message_id}</code>, <code>{$event_type}</code>, <code>{$event_id}</code>, <code>{$attempt}</code>, <code>{$timestamp}</code>, <code>{$token}</code>.</span></p>
<p><label>Description<br><input type="text" name="description" maxlength="2048" size="60" value="${v.description}"></label></p>
${eventTypePicker(o.catalog, v.eventTypes)}
<details class="settings"${customised(v) ? html` open` : ""}><summary>Delivery: method, body, postback URL, success rule, signing</summary>
<div class="form-grid">
<p>${select("method", "Method", METHODS, v.method)}</p>
<p>${select("bodyFormat", "Body format", BODY_FORMATS, v.bodyFormat)}</p>
<p>${select("missingFields", "A payload without a field the URL needs", MISSING_FIELDS, v.missingFields)}</p>
<p><label>URL token, the value of <code>{$token}</code><br><input type="password" name="urlToken" maxlength="512" autocomplete="new-password" placeholder="${v.hasToken ? "set: leave empty to keep it" : "none"}"></label>${
    v.hasToken
      ? html`<br><label><input type="checkbox" name="removeUrlToken"> remove the token</label>`
      : ""
  }</p>
</div>
<fieldset><legend>Success rule <span class="muted">(for trackers that answer 200 with a failure in the body)</span></legend>
<div class="form-grid">
<p><label>The body must contain one of (one per line)<br><textarea name="bodyContains" rows="3" cols="28">${v.bodyContains.join("\n")}</textarea></label></p>
<p><label>The body must contain none of (one per line)<br><textarea name="bodyNotContains" rows="3" cols="28">${v.bodyNotContains.join("\n")}</textarea></label></p>
<p><label><input type="checkbox" name="ignoreCase"${v.ignoreCase ? html` checked` : ""}> ignore case</label><br>
${select("onFailure", "A 2xx that breaks the rule", ON_FAILURE, v.onFailure)}</p>
</div></fieldset>
<p>${select("signatureScheme", "Signatures", SCHEMES, v.signatureScheme)}<br>
<span class="muted">A change keeps the old key signing beside the new one for 24 hours.</span></p>
</details>
${egressFieldset(v.egress)}
${oauth2Fieldset(v.oauth2)}
${o.policy ? policyFieldset(v.policy) : ""}
${o.extra ?? ""}
<p><button type="submit" class="primary">Save</button> <a href="${o.cancelHref}">Cancel</a></p>
</form>`;
}

const quoted = (texts: string[]) => texts.map((t) => `"${t}"`).join(" or ");

/** How an endpoint is delivered, as rows of a <dl> (detail pages). */
export function deliveryFacts(e: ShownEndpoint): Html {
  // a broker destination (docs/destinations.md): where it publishes, and how it signs
  const broker = typeof e.url === "string" ? brokerDestinationText(e.url) : null;
  if (broker !== null) {
    return html`<dt>Delivery</dt><dd data-testid="delivery">${broker}</dd>
<dt>Signatures</dt><dd data-testid="signature-scheme">${SCHEMES.find(([s]) => s === e.signatureScheme)?.[1] ?? e.signatureScheme ?? "v1"}</dd>`;
  }
  const rule = e.successRule;
  const template = typeof e.url === "string" && e.url.includes("{");
  const ruleText = rule
    ? [
        rule.bodyContains?.length && `must contain ${quoted(rule.bodyContains)}`,
        rule.bodyNotContains?.length && `must not contain ${quoted(rule.bodyNotContains)}`,
      ]
        .filter(Boolean)
        .join(" and ")
    : "";
  return html`<dt>Delivery</dt><dd data-testid="delivery">${e.method ?? "POST"}${
    e.method === "GET"
      ? ", no body"
      : e.bodyFormat === "form"
        ? ", form-encoded body"
        : ", JSON body"
  }${
    template
      ? `; URL template, a missing field ${e.missingFields === "empty" ? "renders empty" : "fails the delivery"}`
      : ""
  }${e.urlToken ? html`; URL token <code>${e.urlToken}</code>` : ""}</dd>
<dt>Success rule</dt><dd data-testid="success-rule">${
    rule
      ? `a 2xx body ${ruleText}${rule.ignoreCase ? " (ignoring case)" : ""}; otherwise ${rule.onFailure === "permanent" ? "a dead letter" : "retried"}`
      : "any 2xx"
  }</dd>
<dt>Signatures</dt><dd data-testid="signature-scheme">${SCHEMES.find(([s]) => s === e.signatureScheme)?.[1] ?? e.signatureScheme ?? "v1"}</dd>
${egressFacts(e)}
${oauth2Facts(e)}`;
}

/** The query of the event-type catalogue's first page (GET /api/v1/event-type), the form's checkboxes. */
export const CATALOG_QUERY = { limit: 250 } as const;
