/**
 * Calls into the API from inside the process on behalf of a principal who is already
 * known (the dashboard's signed-in browser), so that pages and actions go through the very
 * routes API clients use: the same validation, tenant scoping, masking and side effects,
 * never a copy of them (docs/dashboard.md, "How pages get their data").
 *
 * Each call is an `app.inject()` carrying a fresh random pass in a header; the auth hook
 * takes the principal registered for that pass and forgets it. A pass exists only while its
 * call runs and is 128 random bits, so a request from outside cannot present one; one that
 * tries is treated as carrying no credentials at all.
 */
import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError, errorCodeOf } from "../errors.ts";
import type { Principal } from "./auth.ts";
import {
  alertsResponse,
  deadLetterAnalysisResponse,
  deadLettersResponse,
  endpointHealthPageResponse,
  endpointHealthResponse,
  healthSummaryResponse,
  requeuePlanResponse,
} from "./health-responses.ts";
import { blockedKeyPageResponse } from "./ordering-key-responses.ts";
import {
  attemptPageResponse,
  endpointHeadersResponse,
  endpointPageResponse,
  endpointResponse,
  endpointSecretResponse,
  eventTypePageResponse,
  messageDeliveriesResponse,
  messagePageResponse,
  messageResponse,
} from "./response-schemas.ts";
import { egressListResponse } from "./routes/egress.ts";
import type { FromSchema } from "./schema-type.ts";
import { taskPageResponse, taskResponse } from "./task-responses.ts";

export const IN_PROCESS_HEADER = "x-hookrelay-in-process";

export interface InProcessResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON of the route called; callers read it by the route's documented shape
  body: any;
  /** the answer as sent, for JSON that must not be re-serialized (a stored payload) */
  text: string;
}

/**
 * The routes the UIs read with `read`, each with the response schema its route declares
 * (test/response-schemas.test.ts checks they are the same objects): the answer's type is
 * derived from it.
 */
export const READ_ROUTES = {
  "/api/v1/health/summary": healthSummaryResponse,
  "/api/v1/alerts": alertsResponse,
  "/api/v1/dead-letters": deadLettersResponse,
  "/api/v1/dead-letters/analysis": deadLetterAnalysisResponse,
  "/api/v1/dead-letters/requeue-plan": requeuePlanResponse,
  "/api/v1/health/endpoints": endpointHealthPageResponse,
  "/api/v1/app/:appId/endpoint": endpointPageResponse,
  "/api/v1/app/:appId/endpoint/:endpointId": endpointResponse,
  "/api/v1/app/:appId/endpoint/:endpointId/health": endpointHealthResponse,
  "/api/v1/app/:appId/endpoint/:endpointId/ordering-keys/blocked": blockedKeyPageResponse,
  "/api/v1/app/:appId/endpoint/:endpointId/secret": endpointSecretResponse,
  "/api/v1/app/:appId/endpoint/:endpointId/headers": endpointHeadersResponse,
  "/api/v1/app/:appId/attempt/endpoint/:endpointId": attemptPageResponse,
  "/api/v1/app/:appId/attempt/msg/:msgId": attemptPageResponse,
  "/api/v1/app/:appId/msg/:msgId/endpoint": messageDeliveriesResponse,
  "/api/v1/app/:appId/msg": messagePageResponse,
  "/api/v1/app/:appId/msg/:msgId": messageResponse,
  "/api/v1/event-type": eventTypePageResponse,
  "/api/v1/egress": egressListResponse,
  "/api/v1/background-task": taskPageResponse,
  "/api/v1/background-task/:taskId": taskResponse,
} as const;

export type ReadRoute = keyof typeof READ_ROUTES;
/** What `route` answers with 200. */
export type ReadResponse<R extends ReadRoute> = FromSchema<(typeof READ_ROUTES)[R]>;
type ParamNames<P> = P extends `${string}:${infer N}/${infer Rest}`
  ? N | ParamNames<Rest>
  : P extends `${string}:${infer N}`
    ? N
    : never;
/** The path parameters of `route`, by name. */
export type ReadParams<R extends ReadRoute> = { [K in ParamNames<R>]: string };

/** The URL of `route` with its parameters filled in (escaped) and the query appended. */
export function readUrl<R extends ReadRoute>(
  route: R,
  params: ReadParams<R>,
  query?: URLSearchParams | Record<string, string | number | undefined>,
): string {
  const values: Record<string, string> = params;
  const path = route.replace(/:(\w+)/g, (_, name: string) =>
    encodeURIComponent(values[name] ?? ""),
  );
  const search =
    query instanceof URLSearchParams
      ? query
      : new URLSearchParams(
          Object.entries(query ?? {}).flatMap(([k, v]): [string, string][] =>
            v === undefined ? [] : [[k, String(v)]],
          ),
        );
  const q = search.toString();
  return q ? `${path}?${q}` : path;
}

/** A 2xx answer of `stream`: its headers, and its body as a stream. */
export interface StreamedAnswer {
  headers: Record<string, string | string[] | number | undefined>;
  body: Readable;
}

export interface InProcessCalls {
  /** the principal of an in-process call, if `request` is one (its pass is then spent) */
  principalOf(request: FastifyRequest): Principal | null;
  /** a JSON call into the API as `principal` */
  call(
    principal: Principal,
    method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE",
    url: string,
    body?: unknown,
  ): Promise<InProcessResult>;
  /**
   * A GET as `principal` whose answer's body is passed on as it arrives (an export),
   * never read into memory here; a 4xx or 5xx answer is read and thrown as its ApiError.
   */
  stream(principal: Principal, url: string): Promise<StreamedAnswer>;
  /**
   * A GET of one of READ_ROUTES as `principal`: its answer, typed by the route's response
   * schema; a 4xx or 5xx answer is thrown as the ApiError it stands for.
   */
  read<R extends ReadRoute>(
    principal: Principal,
    route: R,
    params: ReadParams<R>,
    query?: URLSearchParams | Record<string, string | number | undefined>,
  ): Promise<ReadResponse<R>>;
}

/**
 * The `id` of what a write answered with (the endpoint it created or saved, the message it
 * sent), which the UIs redirect to; an answer without one is a bug, thrown as such.
 */
export function answerId(body: unknown): string {
  if (typeof body === "object" && body !== null && "id" in body && typeof body.id === "string")
    return body.id;
  throw new Error("the API's answer carries no id");
}

/** A 4xx or 5xx answer of an in-process call as the ApiError it stands for. */
export function answerError(res: InProcessResult): ApiError {
  const detail = typeof res.body?.detail === "string" ? res.body.detail : "request failed";
  return new ApiError(res.status, errorCodeOf(res.body?.code), detail);
}

export function makeInProcessCalls(app: () => FastifyInstance): InProcessCalls {
  const passes = new Map<string, Principal>();
  const calls: InProcessCalls = {
    principalOf(request) {
      const pass = request.headers[IN_PROCESS_HEADER];
      if (typeof pass !== "string") return null;
      const principal = passes.get(pass) ?? null;
      passes.delete(pass);
      return principal;
    },
    async call(principal, method, url, body) {
      const pass = randomBytes(16).toString("hex");
      passes.set(pass, principal);
      try {
        const res = await app().inject({
          method,
          url,
          headers: {
            [IN_PROCESS_HEADER]: pass,
            ...(body !== undefined && { "content-type": "application/json" }),
          },
          payload: body === undefined ? undefined : JSON.stringify(body),
        });
        let parsed: unknown = null;
        if (res.body) {
          try {
            parsed = JSON.parse(res.body);
          } catch {
            parsed = res.body;
          }
        }
        return { status: res.statusCode, body: parsed, text: res.body };
      } finally {
        passes.delete(pass);
      }
    },
    async stream(principal, url) {
      const pass = randomBytes(16).toString("hex");
      passes.set(pass, principal);
      try {
        const res = await app().inject({
          method: "GET",
          url,
          headers: { [IN_PROCESS_HEADER]: pass },
          payloadAsStream: true,
        });
        const body = res.stream();
        if (res.statusCode >= 400) {
          let text = "";
          for await (const chunk of body) text += String(chunk);
          let parsed: unknown = text;
          try {
            parsed = JSON.parse(text);
          } catch {}
          throw answerError({ status: res.statusCode, body: parsed, text });
        }
        return { headers: res.headers, body };
      } finally {
        passes.delete(pass);
      }
    },
    async read(principal, route, params, query) {
      const res = await calls.call(principal, "GET", readUrl(route, params, query));
      if (res.status >= 400) throw answerError(res);
      return res.body;
    },
  };
  return calls;
}
