/**
 * The OpenAPI document (/docs/json, built by @fastify/swagger from the routes' schemas):
 * it validates against the OpenAPI specification (@readme/openapi-parser), and every
 * operation has a summary, a description and a schema for its success answer (a 204
 * declares that it has no body). A route added without them fails here by name. And every
 * route's request schemas compile (the API compiles each on its first use otherwise).
 */
import { compileErrors, validate } from "@readme/openapi-parser";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, expect, test } from "vitest";
import { OPERATION_DOCS } from "../src/api/operation-docs.ts";
import { compilePending } from "../src/api/validator-compiler.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";
import { buildTestApi, testConfig } from "./helpers/harness.ts";

interface Operation {
  summary?: string;
  description?: string;
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}
type Doc = { openapi: string; paths: Record<string, Record<string, Operation>> };

const METHODS = new Set(["get", "put", "post", "patch", "delete"]);
/** Svix routes hookrelay keeps only to refuse clearly (400 not_supported): no success answer. */
const NEVER_SUCCEED = new Set([
  "GET /api/v1/app/{appId}/endpoint/{endpointId}/transformation",
  "PATCH /api/v1/app/{appId}/endpoint/{endpointId}/transformation",
]);

let db: TestDb;
let api: FastifyInstance;
let doc: Doc;
beforeAll(async () => {
  db = await createTestDb();
  api = await buildTestApi({ pool: db.pool, config: testConfig({ databaseUrl: db.url }) });
  const res = await api.inject({ method: "GET", url: "/docs/json" });
  expect(res.statusCode).toBe(200);
  doc = res.json() as Doc;
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
});

function operations(): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, op]): [string, Operation] => [`${method.toUpperCase()} ${path}`, op]),
  );
}

test("the document validates against the OpenAPI specification", async () => {
  const result = await validate(structuredClone(doc) as never);
  expect(result.valid ? "" : compileErrors(result)).toBe("");
  expect(operations().length).toBeGreaterThan(50);
});

test("every operation has a summary and a description", () => {
  const missing = operations().flatMap(([name, op]) => [
    ...(op.summary?.trim() ? [] : [`${name}: no summary`]),
    ...(op.description?.trim() ? [] : [`${name}: no description`]),
  ]);
  expect(missing).toEqual([]);
});

test("every operation's success answer has a schema (a 204: none, declared)", () => {
  const missing = operations().flatMap(([name, op]) => {
    if (NEVER_SUCCEED.has(name)) return [];
    const success = Object.entries(op.responses ?? {}).filter(([code]) => /^2\d\d$/.test(code));
    const described = success.some(
      ([code, r]) =>
        code === "204" ||
        Object.values(r.content ?? {}).some((media) => media.schema !== undefined),
    );
    return described ? [] : [`${name}: no 2xx response schema`];
  });
  expect(missing).toEqual([]);
});

test("every entry of operation-docs.ts names an operation of the document", () => {
  const names = new Set(operations().map(([name]) => name));
  expect(Object.keys(OPERATION_DOCS).filter((k) => !names.has(k))).toEqual([]);
});

test("summaries are short, and no two operations of one method share one", () => {
  const long = operations()
    .filter(([, op]) => (op.summary ?? "").length > 80)
    .map(([name]) => name);
  expect(long).toEqual([]);
  const summaries = operations().map(([name, op]) => `${name.split(" ")[0]} ${op.summary}`);
  const repeated = summaries.filter((s, i) => summaries.indexOf(s) !== i);
  expect(repeated).toEqual([]);
});

test("every route's request schemas compile", () => {
  // the validators of the API built above (and of any built before in this process) that
  // no request has used yet; Ajv's error for a schema it refuses would be thrown here
  expect(() => compilePending()).not.toThrow();
  expect(compilePending()).toBe(0);
});
