/**
 * The HTTP application: the API (api/server.ts) with the operator dashboard at /dashboard
 * and the tenant portal at /portal beside it, whose pages call the API's routes in-process
 * (api/in-process.ts). The one place the three are put together; like buildApi it has no
 * side effects (nothing listens until the caller says so; tests use `app.inject()`).
 */
import type { FastifyInstance } from "fastify";
import type { CheckKey } from "./api/auth.ts";
import { makeInProcessCalls } from "./api/in-process.ts";
import { type ApiOptions, apiContext, buildApi } from "./api/server.ts";
import { registerDashboard } from "./dashboard/plugin.ts";
import { registerPortal } from "./portal/plugin.ts";

export interface HttpAppOptions extends Omit<ApiOptions, "calls"> {
  /** What the dashboard's sign-in checks a typed key with: the same checker as `authenticate`'s. */
  checkKey: CheckKey;
  /** serve the operator dashboard at /dashboard (default true) */
  dashboard?: boolean;
  /** serve the tenant portal at /portal (default true) */
  portal?: boolean;
}

/** Builds the API, the dashboard and the portal as one Fastify application. */
export async function buildHttpApp(options: HttpAppOptions): Promise<FastifyInstance> {
  // The UIs call the API's routes in-process as their signed-in principal.
  const calls = makeInProcessCalls(() => app);
  const app = await buildApi({ ...options, calls });
  const ctx = apiContext(options);
  if (options.dashboard !== false)
    await registerDashboard(app, { ...ctx, calls, checkKey: options.checkKey });
  if (options.portal !== false) await registerPortal(app, { ...ctx, calls });
  return app;
}
