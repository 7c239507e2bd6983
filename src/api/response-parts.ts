/** The pieces the response schemas are made of (response-schemas.ts, health-responses.ts). */

export const text = { type: "string" } as const;
export const nullableText = { type: ["string", "null"] } as const;
export const count = { type: "integer" } as const;
export const nullableCount = { type: ["integer", "null"] } as const;
export const nullableNumber = { type: ["number", "null"] } as const;
export const nameList = { type: ["array", "null"], items: text } as const;
/** Any JSON: a payload or schemas embedded verbatim (raw-json.ts). */
export const anyJson = {} as const;

/** A listing page (pagination.ts's Page) of `item`. */
export function pageOf<const I>(item: I) {
  return {
    type: "object",
    properties: {
      data: { type: "array", items: item },
      iterator: nullableText,
      prevIterator: nullableText,
      done: { type: "boolean" },
    },
    required: ["data", "iterator", "prevIterator", "done"],
  } as const;
}
