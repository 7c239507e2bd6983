/** What the dashboard's pages are given: its options and deps, and the request's session. */
import type { FastifyRequest } from "fastify";
import type { CheckKey } from "../api/auth.ts";
import type { ApiContext } from "../api/context.ts";
import type { InProcessCalls } from "../api/in-process.ts";
import type { Sessions } from "./session.ts";

export interface DashboardOptions extends ApiContext {
  calls: InProcessCalls;
  checkKey: CheckKey;
}

/** What every page module is given. */
export interface DashboardDeps extends DashboardOptions {
  sessions: Sessions;
}

/** The signed-in session of a request that passed the dashboard's hook. */
export function sessionOf(request: FastifyRequest) {
  const session = request.dashboardSession;
  if (!session) throw new Error("dashboard route without a session");
  return session;
}
