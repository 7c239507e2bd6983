/**
 * The delivery-policy part of the dashboard's endpoint form (docs/dashboard.md, "Editing
 * an endpoint"): one field per policy field of the table (domain/endpoint-policy.ts) that
 * declares a form field, with its label and help: a number field (with its unit and
 * bounds) for an integer, a select of its words for a choice. An empty field means the
 * server's default (or no limit), as null does in the API.
 *
 * The fields post under their API names beside a marker (`policyFields`), so a form that
 * does not show them (the portal's) sends no policy and changes none.
 */
import { ENDPOINT_POLICY, type PolicyField, type PolicyName } from "../domain/endpoint-policy.ts";
import { field } from "./form-body.ts";
import { type Html, html } from "./html.ts";

/** The fields as typed: "" is unset. */
export type PolicyFormValues = Partial<Record<PolicyName, string>>;

const MARKER = "policyFields";

/** The policy fields the form shows, in the table's order. */
export const FORM_POLICY: readonly (PolicyField & { form: NonNullable<PolicyField["form"]> })[] = (
  ENDPOINT_POLICY as readonly PolicyField[]
).filter((f): f is PolicyField & { form: NonNullable<PolicyField["form"]> } => f.form !== null);

const nameOf = (f: PolicyField) => f.api as PolicyName;

/** The form's values for an endpoint as the API shows it (its policy fields by API name). */
export function policyValuesOfEndpoint(e: Readonly<Record<string, unknown>>): PolicyFormValues {
  const values: PolicyFormValues = {};
  for (const f of FORM_POLICY) {
    const v = e[f.api];
    values[nameOf(f)] = typeof v === "number" || typeof v === "string" ? String(v) : "";
  }
  return values;
}

/** The values as posted. */
export function policyValuesOfForm(body: unknown): PolicyFormValues {
  const values: PolicyFormValues = {};
  for (const f of FORM_POLICY) values[nameOf(f)] = field(body, f.api).trim();
  return values;
}

/**
 * The API body's policy fields for a posted form: empty is null (the default), digits are
 * a number for an integer field, anything else goes as typed for the API to refuse in its
 * own words. Nothing when the form did not show the fields.
 */
export function policyBodyOfForm(body: unknown): Record<string, unknown> {
  if (field(body, MARKER) !== "1") return {};
  const out: Record<string, unknown> = {};
  const values = policyValuesOfForm(body);
  for (const f of FORM_POLICY) {
    const v = values[nameOf(f)] ?? "";
    out[f.api] = v === "" ? null : f.sqlType === "integer" && /^\d+$/.test(v) ? Number(v) : v;
  }
  return out;
}

/** One field: a number input, or a select of the field's words (empty: the default). */
function input(f: (typeof FORM_POLICY)[number], value: string): Html {
  const label = f.sqlType === "integer" ? `${f.form.label} (${f.form.unit})` : f.form.label;
  const control =
    f.sqlType === "integer"
      ? html`<input type="number" name="${f.api}" min="${f.min}" max="${f.max}" step="1" value="${value}" placeholder="${f.default ? "server default" : "no limit"}" data-policy="${f.api}">`
      : html`<select name="${f.api}" data-policy="${f.api}"><option value=""${value === "" ? html` selected` : ""}>server default</option>${f.values.map(
          (w) => html`<option value="${w}"${value === w ? html` selected` : ""}>${w}</option>`,
        )}</select>`;
  return html`<p><label>${label}<br>${control}</label><br>
<span class="muted">${f.form.help}</span></p>`;
}

/** The policy section: open by itself when any field is set. */
export function policyFieldset(values: PolicyFormValues): Html {
  const set = FORM_POLICY.some((f) => values[nameOf(f)]);
  return html`<details class="settings"${set ? html` open` : ""}><summary>Delivery policy: timeout, retries, in-flight limit, circuit, rate limits, while disabled <span class="muted">(empty: the server's default or no limit)</span></summary>
<input type="hidden" name="${MARKER}" value="1">
<div class="form-grid">
${FORM_POLICY.map((f) => input(f, values[nameOf(f)] ?? ""))}
</div>
</details>`;
}
