/**
 * The tenant-scoping decision for every route (docs/security.md, "API keys"), as a table
 * the isolation tests walk: each route says how an app key's access is limited, and a
 * plausible valid body where it takes one, so that an answer is about scoping and not
 * validation. The routes are discovered from Fastify's own route tree (printRoutes, which
 * includes routes hidden from the OpenAPI document) and must equal this table: a route
 * added without a decision about its tenant scoping fails isolation-routes.test.ts.
 */
import type { FastifyInstance } from "fastify";
import { discoverRoutes } from "./routes.ts";

const V1 = "/api/v1";

/** Every registered route as "METHOD /path", sorted and without repeats. */
export function discoveredRoutes(app: FastifyInstance): string[] {
  return [...new Set(discoverRoutes(app).map((r) => `${r.method} ${r.path}`))].sort();
}

/**
 * app       the path names an app (and maybe its endpoint/message/attempt): another
 *           app's → 404, identical to a resource that does not exist
 * delivery  /deliveries/{deliveryId}: another app's delivery → 404
 * task      /background-task/{taskId}: another app's background task → 404
 * admin     admin-only, no app in the path: an app key → 403
 * list      listings across apps: an app key sees its own app's rows only
 * requeue   acts on rows chosen by the body: limited to the key's app
 * catalogue global, not tenant data (event types): any key reads, admin writes
 * public    no authentication (docs, liveness, metrics)
 * dashboard the dashboard's pages (docs/dashboard.md): a session cookie, not a bearer key;
 *           they read through the API as the signed-in key, and their scoping is tested in
 *           dashboard-pages.test.ts
 * portal    a tenant-portal page or action (docs/portal.md): a session opened with one
 *           app's link; another app's ids in the path → 404, lists show the app's own
 *           rows only (portal-isolation.test.ts); `body` is the form's fields, `ownStatus`
 *           the stable refusal its own ids get (a blocked key's action on no blocked head)
 */
export type Kind =
  | "app"
  | "delivery"
  | "task"
  | "admin"
  | "list"
  | "requeue"
  | "catalogue"
  | "public"
  | "dashboard"
  | "portal";

export interface Fixture {
  rx: string;
  appB: string;
}

export interface Rule {
  kind: Kind;
  /** a plausible valid body, so the answer is about scoping, not validation */
  body?: (f: Fixture) => unknown;
  /**
   * the status its own app's key gets when it is not a 2xx: a Svix call hookrelay answers
   * with a stable refusal (400 not_supported) for every endpoint
   */
  ownStatus?: number;
}

export const TABLE: [methods: string, path: string, rule: Rule][] = [
  // public
  ["GET HEAD", "/docs", { kind: "public" }],
  ["GET HEAD", "/docs/", { kind: "public" }],
  ["GET HEAD", "/docs/*", { kind: "public" }],
  ["GET HEAD", "/docs/json", { kind: "public" }],
  ["GET HEAD", "/docs/yaml", { kind: "public" }],
  ["GET HEAD", "/docs/static/index.html", { kind: "public" }],
  ["GET HEAD", "/docs/static/swagger-initializer.js", { kind: "public" }],
  ["GET HEAD", "/healthz", { kind: "public" }],
  // Svix's health check (no API key, as in Svix)
  ["GET HEAD", `${V1}/health`, { kind: "public" }],
  ["GET HEAD", `${V1}/health/ping`, { kind: "public" }],
  ["GET HEAD", "/metrics", { kind: "public" }],
  ["GET HEAD", "/", { kind: "public" }],
  ["GET HEAD", "/dashboard/assets/:hash/:name", { kind: "public" }],
  ["GET HEAD POST", "/dashboard/sign-in", { kind: "public" }],
  // the dashboard
  ["GET HEAD", "/dashboard", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/chart-data", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/dead-letters", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/endpoints", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/endpoints/:endpointId", { kind: "dashboard" }],
  ["GET HEAD POST", "/dashboard/endpoints/:endpointId/requeue", { kind: "dashboard" }],
  ["GET HEAD POST", "/dashboard/endpoints/:endpointId/edit", { kind: "dashboard" }],
  ["POST", "/dashboard/endpoints/:endpointId/disable", { kind: "dashboard" }],
  ["POST", "/dashboard/endpoints/:endpointId/enable", { kind: "dashboard" }],
  ["POST", "/dashboard/endpoints/:endpointId/reset-circuit", { kind: "dashboard" }],
  [
    "POST",
    "/dashboard/endpoints/:endpointId/ordering-keys/:deliveryId/retry",
    { kind: "dashboard" },
  ],
  [
    "POST",
    "/dashboard/endpoints/:endpointId/ordering-keys/:deliveryId/skip",
    { kind: "dashboard" },
  ],
  ["POST", "/dashboard/endpoints/:endpointId/rotate-secret", { kind: "dashboard" }],
  ["GET HEAD POST", "/dashboard/endpoints/:endpointId/replay", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/endpoints/:endpointId/replay/:taskId", { kind: "dashboard" }],
  ["POST", "/dashboard/endpoints/:endpointId/replay/:taskId/cancel", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/messages", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/message-list", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/message-list/export", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/attempt-list", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/attempt-list/export", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/messages/:msgId", { kind: "dashboard" }],
  ["GET HEAD", "/dashboard/messages/:msgId/payload", { kind: "dashboard" }],
  ["POST", "/dashboard/messages/:msgId/resend", { kind: "dashboard" }],
  ["POST", "/dashboard/sign-out", { kind: "dashboard" }],
  // applications
  ["GET HEAD", `${V1}/app`, { kind: "list" }],
  ["POST", `${V1}/app`, { kind: "admin", body: () => ({ name: "made by an app key" }) }],
  ["GET HEAD DELETE", `${V1}/app/:appId`, { kind: "app" }],
  ["PUT", `${V1}/app/:appId`, { kind: "app", body: () => ({ name: "replaced by A" }) }],
  ["PATCH", `${V1}/app/:appId`, { kind: "app", body: () => ({ name: "patched by A" }) }],
  // endpoints
  ["GET HEAD", `${V1}/app/:appId/endpoint`, { kind: "app" }],
  [
    "POST",
    `${V1}/app/:appId/endpoint`,
    { kind: "app", body: (f) => ({ url: `${f.rx}/planted-by-a` }) },
  ],
  ["GET HEAD DELETE", `${V1}/app/:appId/endpoint/:endpointId`, { kind: "app" }],
  [
    "PUT",
    `${V1}/app/:appId/endpoint/:endpointId`,
    { kind: "app", body: (f) => ({ url: `${f.rx}/hijacked-by-a` }) },
  ],
  [
    "PATCH",
    `${V1}/app/:appId/endpoint/:endpointId`,
    { kind: "app", body: (f) => ({ url: `${f.rx}/hijacked-by-a` }) },
  ],
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/secret`, { kind: "app" }],
  [
    "POST",
    `${V1}/app/:appId/endpoint/:endpointId/secret/rotate`,
    { kind: "app", body: () => ({ gracePeriodSeconds: 0 }) },
  ],
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/msg`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/health`, { kind: "app" }],
  ["POST", `${V1}/app/:appId/endpoint/:endpointId/circuit/reset`, { kind: "app" }],
  // blocked ordering keys (docs/delivery.md, Ordering): the tenants' deliveries are no
  // blocked heads, so their own key's action is the stable 409 refusal
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/ordering-keys/blocked`, { kind: "app" }],
  ...(["retry", "skip"] as const).map((action): [string, string, Rule] => [
    "POST",
    `${V1}/app/:appId/endpoint/:endpointId/ordering-keys/blocked/:deliveryId/${action}`,
    { kind: "app", ownStatus: 409 },
  ]),
  // the svix client's endpoint headers, stats and (unsupported) transformation
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/headers`, { kind: "app" }],
  [
    "PUT PATCH",
    `${V1}/app/:appId/endpoint/:endpointId/headers`,
    { kind: "app", body: () => ({ headers: { "X-Set-By-A": "1" } }) },
  ],
  ["GET HEAD", `${V1}/app/:appId/endpoint/:endpointId/stats`, { kind: "app" }],
  // recovery (docs/recovery.md): dry runs, so a probe counts and sends nothing
  ...(["recover", "replay-missing", "bulk-replay"] as const).map(
    (action): [string, string, Rule] => [
      "POST",
      `${V1}/app/:appId/endpoint/:endpointId/${action}`,
      {
        kind: "app",
        body: () => ({ since: new Date(Date.now() - 3_600_000).toISOString(), dryRun: true }),
      },
    ],
  ),
  [
    "GET HEAD",
    `${V1}/app/:appId/endpoint/:endpointId/transformation`,
    { kind: "app", ownStatus: 400 },
  ],
  [
    "PATCH",
    `${V1}/app/:appId/endpoint/:endpointId/transformation`,
    { kind: "app", body: () => ({ code: "x" }), ownStatus: 400 },
  ],
  // messages and attempts
  ["GET HEAD", `${V1}/app/:appId/msg`, { kind: "app" }],
  ["DELETE", `${V1}/app/:appId/msg/:msgId/content`, { kind: "app" }],
  [
    "POST",
    `${V1}/app/:appId/msg`,
    { kind: "app", body: () => ({ eventType: "iso.probe", payload: { from: "A" } }) },
  ],
  ["GET HEAD", `${V1}/app/:appId/msg/:msgId`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/msg/:msgId/attempt/:attemptId`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/msg/:msgId/endpoint`, { kind: "app" }],
  ["POST", `${V1}/app/:appId/msg/:msgId/endpoint/:endpointId/resend`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/attempt/msg/:msgId`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/attempt/endpoint/:endpointId`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/export/msg`, { kind: "app" }],
  ["GET HEAD", `${V1}/app/:appId/export/attempt/endpoint/:endpointId`, { kind: "app" }],
  // operations
  ["GET HEAD", `${V1}/health/endpoints`, { kind: "list" }],
  ["GET HEAD", `${V1}/health/summary`, { kind: "list" }],
  ["GET HEAD", `${V1}/alerts`, { kind: "list" }],
  ["GET HEAD", `${V1}/dead-letters`, { kind: "list" }],
  ["GET HEAD", `${V1}/dead-letters/analysis`, { kind: "list" }],
  // chart buckets: an app key gets its own app's (dashboard-charts.test.ts)
  ["GET HEAD", `${V1}/stats/buckets`, { kind: "list" }],
  [
    "POST",
    `${V1}/dead-letters/requeue`,
    { kind: "requeue", body: () => ({ since: "2000-01-01T00:00:00Z" }) },
  ],
  ["POST", `${V1}/deliveries/:deliveryId/cancel`, { kind: "delivery" }],
  // background tasks: the list shows the key's app's own; one by id is its app's only
  ["GET HEAD", `${V1}/background-task`, { kind: "list" }],
  ["GET HEAD", `${V1}/background-task/:taskId`, { kind: "task" }],
  ["POST", `${V1}/background-task/:taskId/cancel`, { kind: "task" }],
  // what a requeue would take: an app key sees its own app's dead letters only
  ["GET HEAD", `${V1}/dead-letters/requeue-plan`, { kind: "list" }],
  // maintenance jobs the server runs with its own settings (docs/cli.md)
  ["POST", `${V1}/operations/purge`, { kind: "admin", body: () => ({ budgetMs: 100 }) }],
  [
    "POST",
    `${V1}/operations/reencrypt-secrets`,
    { kind: "admin", body: () => ({ budgetMs: 100 }) },
  ],
  // API keys
  ["GET HEAD", `${V1}/api-keys`, { kind: "admin" }],
  ["POST", `${V1}/api-keys`, { kind: "admin", body: (f) => ({ role: "app", appId: f.appB }) }],
  ["DELETE", `${V1}/api-keys/:keyId`, { kind: "admin" }],
  // event types: a global catalogue
  ["GET HEAD", `${V1}/event-type`, { kind: "catalogue" }],
  // the egress pools' public IPs (docs/egress.md): global, any key reads
  ["GET HEAD", `${V1}/egress`, { kind: "catalogue" }],
  [
    "POST",
    `${V1}/event-type`,
    { kind: "admin", body: () => ({ name: "iso.by-a", description: "x" }) },
  ],
  ["GET HEAD", `${V1}/event-type/:name`, { kind: "catalogue" }],
  [
    "PUT",
    `${V1}/event-type/:name`,
    { kind: "admin", body: () => ({ description: "replaced by A" }) },
  ],
  [
    "PATCH",
    `${V1}/event-type/:name`,
    { kind: "admin", body: () => ({ description: "patched by A" }) },
  ],
  ["DELETE", `${V1}/event-type/:name`, { kind: "admin" }],
  // portal access links (docs/portal.md): the app's key or an admin key
  ["POST", `${V1}/auth/app-portal-access/:appId`, { kind: "app", body: () => ({ expiry: 600 }) }],
  ["GET HEAD", `${V1}/auth/app/:appId/portal-access`, { kind: "app" }],
  ["POST", `${V1}/auth/app/:appId/portal-access/:tokenId/revoke`, { kind: "app" }],
  ["POST", `${V1}/auth/app/:appId/expire-all`, { kind: "app", body: () => ({ expiry: 3600 }) }],
  ["POST", `${V1}/auth/dashboard-access/:appId`, { kind: "app" }],
  // authorized by a portal link's own token, not an API key
  ["POST", `${V1}/auth/logout`, { kind: "public" }],
  [
    "POST",
    `${V1}/app/:appId/endpoint/:endpointId/send-example`,
    { kind: "app", body: () => ({ eventType: "hookrelay.ping" }) },
  ],
  // the tenant portal: its landing page and the link's exchange need no session
  ["GET HEAD", "/portal", { kind: "public" }],
  ["GET HEAD", "/portal/", { kind: "public" }],
  ["POST", "/portal/session", { kind: "public" }],
  ["POST", "/portal/sign-out", { kind: "portal" }],
  ["GET HEAD", "/portal/endpoints", { kind: "portal" }],
  ["GET HEAD", "/portal/endpoints/new", { kind: "portal" }],
  [
    "POST",
    "/portal/endpoints",
    { kind: "portal", body: (f) => ({ url: `${f.rx}/planted-by-a`, description: "by A" }) },
  ],
  ["GET HEAD", "/portal/endpoints/:endpointId", { kind: "portal" }],
  ["GET HEAD", "/portal/endpoints/:endpointId/edit", { kind: "portal" }],
  ["GET HEAD", "/portal/endpoints/:endpointId/chart-data", { kind: "portal" }],
  [
    "POST",
    "/portal/endpoints/:endpointId",
    { kind: "portal", body: (f) => ({ url: `${f.rx}/hijacked-by-a`, description: "by A" }) },
  ],
  ["POST", "/portal/endpoints/:endpointId/disable", { kind: "portal" }],
  ["POST", "/portal/endpoints/:endpointId/enable", { kind: "portal" }],
  ["POST", "/portal/endpoints/:endpointId/delete", { kind: "portal" }],
  ["POST", "/portal/endpoints/:endpointId/secret", { kind: "portal" }],
  ["POST", "/portal/endpoints/:endpointId/secret/rotate", { kind: "portal" }],
  [
    "POST",
    "/portal/endpoints/:endpointId/test",
    { kind: "portal", body: () => ({ eventType: "hookrelay.ping" }) },
  ],
  // the Replay action (a dry run: a count, nothing sent) and a replay's view and cancel
  ["GET HEAD", "/portal/endpoints/:endpointId/replay", { kind: "portal" }],
  [
    "POST",
    "/portal/endpoints/:endpointId/replay",
    {
      kind: "portal",
      body: () => ({
        kind: "recover",
        since: new Date(Date.now() - 3_600_000).toISOString(),
        intent: "count",
      }),
    },
  ],
  ["GET HEAD", "/portal/endpoints/:endpointId/replay/:taskId", { kind: "portal" }],
  ["POST", "/portal/endpoints/:endpointId/replay/:taskId/cancel", { kind: "portal" }],
  ["GET HEAD", "/portal/messages", { kind: "portal" }],
  ["GET HEAD", "/portal/message-export", { kind: "portal" }],
  ["GET HEAD", "/portal/attempts", { kind: "portal" }],
  ["GET HEAD", "/portal/attempt-export", { kind: "portal" }],
  ["GET HEAD", "/portal/messages/:msgId", { kind: "portal" }],
  ["GET HEAD", "/portal/messages/:msgId/payload", { kind: "portal" }],
  [
    "POST",
    "/portal/endpoints/:endpointId/ordering-keys/:deliveryId/retry",
    { kind: "portal", ownStatus: 409 },
  ],
  [
    "POST",
    "/portal/endpoints/:endpointId/ordering-keys/:deliveryId/skip",
    { kind: "portal", ownStatus: 409 },
  ],
  ["POST", "/portal/messages/:msgId/endpoints/:endpointId/resend", { kind: "portal" }],
  ["GET HEAD", "/portal/event-types", { kind: "portal" }],
  ["GET HEAD", "/portal/egress", { kind: "portal" }],
];

export const RULES = new Map<string, Rule & { method: string; path: string }>();
for (const [methods, path, rule] of TABLE) {
  for (const method of methods.split(" "))
    RULES.set(`${method} ${path}`, { ...rule, method, path });
}
export const byKind = (kind: Kind) => [...RULES.values()].filter((r) => r.kind === kind);
export const paramsOf = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
export const fill = (path: string, values: Record<string, string>) =>
  path.replace(/:(\w+)/g, (_, name: string) =>
    encodeURIComponent(values[name] ?? `missing-${name}`),
  );
