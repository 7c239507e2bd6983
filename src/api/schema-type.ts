/**
 * The TypeScript type of a JSON value that a JSON schema (written `as const`) describes, for
 * the subset the routes' response schemas use: `type` (one or a list), `enum`, `properties`
 * with `required`, `items`, and `additionalProperties` (true, or a schema). Types derived
 * from the response schemas are what the dashboard and the portal read (in-process.ts).
 */

type TypeName = "string" | "number" | "integer" | "boolean" | "null" | "array" | "object";

/** The value a schema describes. */
export type FromSchema<S> = S extends { enum: readonly (infer E)[] }
  ? E
  : S extends { type: infer T }
    ? T extends readonly TypeName[]
      ? OfType<S, T[number]>
      : T extends TypeName
        ? OfType<S, T>
        : unknown
    : unknown;

type OfType<S, T> = T extends "string"
  ? string
  : T extends "number" | "integer"
    ? number
    : T extends "boolean"
      ? boolean
      : T extends "null"
        ? null
        : T extends "array"
          ? S extends { items: infer I }
            ? FromSchema<I>[]
            : unknown[]
          : T extends "object"
            ? ObjectOf<S>
            : never;

type RequiredOf<S> = S extends { required: readonly (infer K)[] } ? K : never;

type Flatten<T> = { [K in keyof T]: T[K] } & {};

type Known<S> = S extends { properties: infer P }
  ? { [K in keyof P & RequiredOf<S>]: FromSchema<P[K]> } & {
      [K in Exclude<keyof P, RequiredOf<S>>]?: FromSchema<P[K]>;
    }
  : unknown;

type ObjectOf<S> = S extends { additionalProperties: true }
  ? Flatten<Known<S>> & { [key: string]: unknown }
  : S extends { additionalProperties: infer A extends object }
    ? Flatten<Known<S>> & { [key: string]: FromSchema<A> }
    : Flatten<Known<S>>;
