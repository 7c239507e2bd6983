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
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Principal } from "./auth.ts";

export const IN_PROCESS_HEADER = "x-hookrelay-in-process";

export interface InProcessResult {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON of the route called; callers read it by the route's documented shape
  body: any;
  /** the answer as sent, for JSON that must not be re-serialized (a stored payload) */
  text: string;
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
}

export function makeInProcessCalls(app: () => FastifyInstance): InProcessCalls {
  const passes = new Map<string, Principal>();
  return {
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
  };
}
