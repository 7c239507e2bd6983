/**
 * Form posts of the dashboard and the portal (application/x-www-form-urlencoded): fields by
 * name, a repeated name (checkboxes) as an array, and the two ways pages read them.
 */

export type FormBody = Record<string, string | string[]>;

/** The body of a form post; the object has no prototype, so no field name can reach one. */
export function parseForm(text: string): FormBody {
  const out: FormBody = Object.create(null);
  for (const [k, v] of new URLSearchParams(text)) {
    const prior = out[k];
    out[k] = prior === undefined ? v : Array.isArray(prior) ? [...prior, v] : [prior, v];
  }
  return out;
}

/** A form field's first value, trimmed ("" when absent). */
export const field = (body: unknown, name: string): string => {
  const v = (body as FormBody | undefined)?.[name];
  return (Array.isArray(v) ? (v[0] ?? "") : (v ?? "")).trim();
};

/** Every value of a repeated form field. */
export const fields = (body: unknown, name: string): string[] => {
  const v = (body as FormBody | undefined)?.[name];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
};
