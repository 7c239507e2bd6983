/**
 * A cookie-keeping client of the dashboard through app.inject(), for the tests that need no
 * browser: sign in with a key, read pages, post forms with the page's CSRF token.
 */
import type { FastifyInstance, LightMyRequestResponse } from "fastify";

export interface DashboardClient {
  cookies: Map<string, string>;
  get(url: string): Promise<LightMyRequestResponse>;
  /** a form post; `_csrf` is the last page's token unless the fields give one */
  post(
    url: string,
    fields?: Record<string, string>,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  /** the CSRF token of the last page read */
  csrf: string | null;
  signIn(key: string): Promise<LightMyRequestResponse>;
}

/** The value of a hidden input or meta tag in a page. */
export function hiddenValue(page: string, name: string): string | null {
  const m =
    new RegExp(`name="${name}" value="([^"]*)"`).exec(page) ??
    new RegExp(`name="${name}" content="([^"]*)"`).exec(page);
  return m ? m[1]! : null;
}

export function dashboardClient(api: FastifyInstance): DashboardClient {
  const cookies = new Map<string, string>();
  const cookieHeader = () => [...cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  const keep = (res: LightMyRequestResponse) => {
    const set = res.headers["set-cookie"];
    for (const c of set === undefined ? [] : Array.isArray(set) ? set : [set]) {
      const [pair] = c.split(";");
      const eq = pair!.indexOf("=");
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (/max-age=0/i.test(c)) cookies.delete(name);
      else cookies.set(name, value);
    }
    const body = res.body;
    client.csrf = hiddenValue(body, "csrf-token") ?? hiddenValue(body, "_csrf") ?? client.csrf;
    return res;
  };
  const client: DashboardClient = {
    cookies,
    csrf: null,
    async get(url) {
      return keep(await api.inject({ method: "GET", url, headers: { cookie: cookieHeader() } }));
    },
    async post(url, fields = {}, headers = {}) {
      const form = new URLSearchParams({
        ...(client.csrf ? { _csrf: client.csrf } : {}),
        ...fields,
      });
      return keep(
        await api.inject({
          method: "POST",
          url,
          headers: {
            cookie: cookieHeader(),
            "content-type": "application/x-www-form-urlencoded",
            ...headers,
          },
          payload: form.toString(),
        }),
      );
    },
    async signIn(key) {
      await client.get("/dashboard/sign-in");
      return client.post("/dashboard/sign-in", { key });
    },
  };
  return client;
}
