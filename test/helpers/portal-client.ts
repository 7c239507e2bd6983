/**
 * A portal session through app.inject(): the link's token traded at /portal/session as the
 * landing page's script does, then the dashboard's cookie-keeping client (pages, form posts
 * with the page's CSRF token).
 */
import type { FastifyInstance } from "fastify";
import { type DashboardClient, dashboardClient } from "./dashboard-client.ts";

/** The token in a portal link's fragment. */
export const tokenOfUrl = (url: string): string => /#token=([^&]+)/.exec(url)![1]!;

/** Opens a session with `token`; the client then holds its cookie and CSRF token. */
export async function openPortal(api: FastifyInstance, token: string): Promise<DashboardClient> {
  const client = dashboardClient(api);
  const res = await api.inject({
    method: "POST",
    url: "/portal/session",
    headers: { "content-type": "application/json" },
    payload: JSON.stringify({ token }),
  });
  if (res.statusCode !== 204)
    throw new Error(`portal session refused: ${res.statusCode} ${res.body}`);
  const set = res.headers["set-cookie"];
  const [pair] = String(Array.isArray(set) ? set[0] : set).split(";");
  const eq = pair!.indexOf("=");
  client.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
  const first = await client.get("/portal/endpoints");
  if (first.statusCode !== 200) throw new Error(`portal endpoints page: ${first.statusCode}`);
  return client;
}
