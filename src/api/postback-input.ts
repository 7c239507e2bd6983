/**
 * The postback fields of an endpoint (README.md, Postbacks), kept apart from the rest of
 * endpoint-input.ts: their JSON schema, the checks a schema cannot make (the URL template
 * parses, its host is literal, `{$token}` has a token, GET has no form body), the columns
 * they write and how a reply shows them (the URL token only as "***").
 */
import type { EndpointFields, EndpointRow, SuccessRuleRow } from "../db/queries/endpoints.ts";
import {
  isTemplate,
  parseUrlTemplate,
  sampleUrl,
  type UrlTemplate,
  UrlTemplateError,
} from "../delivery/url-template.ts";
import { MASK } from "../security/redact.ts";
import { validationError } from "./errors.ts";

export interface PostbackIn {
  method?: "POST" | "GET" | "PUT";
  bodyFormat?: "json" | "form";
  urlToken?: string | null;
  missingFields?: "fail" | "empty";
  successRule?: SuccessRuleRow | null;
}

const ruleTexts = {
  type: "array",
  items: { type: "string", minLength: 1, maxLength: 256 },
  maxItems: 16,
} as const;

export const postbackProperties = {
  method: {
    type: "string",
    enum: ["POST", "GET", "PUT"],
    description: "default POST; GET sends no body",
  },
  bodyFormat: {
    type: "string",
    enum: ["json", "form"],
    description: "json (default): the payload as sent; form: its top-level fields, form-encoded",
  },
  urlToken: {
    type: ["string", "null"],
    minLength: 1,
    maxLength: 512,
    // no control characters
    pattern: "^[^\\u0000-\\u001f\\u007f]*$",
    description:
      "the value of {$token} in the URL template; stored sealed, shown as *** (a PUT that leaves it out keeps it, like the signing secret)",
  },
  missingFields: {
    type: "string",
    enum: ["fail", "empty"],
    description:
      "a payload without a field the URL template needs: fail (default; a dead letter of kind missing_field) or render it empty",
  },
  successRule: {
    type: ["object", "null"],
    additionalProperties: false,
    properties: {
      bodyContains: ruleTexts,
      bodyNotContains: ruleTexts,
      ignoreCase: { type: "boolean" },
      onFailure: { type: "string", enum: ["retry", "permanent"] },
    },
    description:
      "a 2xx counts as delivered only if its body contains one of bodyContains and none of bodyNotContains (literal text); a body that breaks it is retried (default) or a dead letter",
  },
} as const;

/** The columns the postback fields of a request write (the token still plain: the route seals it). */
export function postbackColumns(body: PostbackIn): Partial<EndpointFields> {
  const cols: Partial<EndpointFields> = {};
  if (body.method !== undefined) cols.method = body.method;
  if (body.bodyFormat !== undefined) cols.body_format = body.bodyFormat;
  if (body.missingFields !== undefined) cols.missing_fields = body.missingFields;
  if (body.urlToken !== undefined) {
    if (body.urlToken === MASK)
      throw validationError(
        `urlToken "${MASK}" is how replies mask the token; send the token itself, or leave the field out to keep it`,
      );
    cols.url_token = body.urlToken;
  }
  if (body.successRule !== undefined) {
    const rule = body.successRule;
    if (rule && !rule.bodyContains?.length && !rule.bodyNotContains?.length)
      throw validationError("successRule needs bodyContains or bodyNotContains (or null for none)");
    cols.success_rule = rule;
  }
  return cols;
}

/** A URL template parsed, or a 422 that says what is wrong and where. */
export function parseTemplateOr422(url: string): UrlTemplate {
  try {
    return parseUrlTemplate(url);
  } catch (err) {
    if (err instanceof UrlTemplateError)
      throw validationError(`url template: ${err.message}`, { cause: err });
    throw err;
  }
}

/**
 * The URL that URL checks (scheme, credentials, SSRF guard) look at: the URL itself, or a
 * template with its placeholders filled with a harmless value (its host is literal).
 */
export function urlToCheck(url: string): string {
  return isTemplate(url) ? sampleUrl(parseTemplateOr422(url)) : url;
}

/** What the checks across fields look at: the endpoint as it will be once saved. */
export interface PostbackState {
  url: string;
  method: string;
  bodyFormat: string;
  hasToken: boolean;
}

/** Checks the fields together; throws a 422. */
export function checkPostbackState(state: PostbackState): void {
  if (state.method === "GET" && state.bodyFormat === "form")
    throw validationError('bodyFormat "form" needs POST or PUT: a GET sends no body');
  const usesToken = isTemplate(state.url) && parseTemplateOr422(state.url).usesToken;
  if (usesToken && !state.hasToken)
    throw validationError("the url template places {$token}, but the endpoint has no urlToken");
}

/** The endpoint as it will be after `cols` are written over `current` (null: a new one). */
export function stateAfter(
  current: EndpointRow | null,
  cols: Partial<EndpointFields>,
): PostbackState {
  return {
    url: cols.url ?? current?.url ?? "",
    method: cols.method ?? current?.method ?? "POST",
    bodyFormat: cols.body_format ?? current?.body_format ?? "json",
    hasToken:
      cols.url_token !== undefined ? cols.url_token !== null : (current?.has_url_token ?? false),
  };
}

/** The postback fields of a reply. */
export const postbackOut = (r: EndpointRow) => ({
  method: r.method,
  bodyFormat: r.body_format,
  urlToken: r.has_url_token ? MASK : null,
  missingFields: r.missing_fields,
  successRule: r.success_rule,
});
