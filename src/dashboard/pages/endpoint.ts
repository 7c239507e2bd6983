/**
 * GET /dashboard/endpoints/{endpointId}: one endpoint (docs/dashboard.md, "Pages"): its
 * configuration, circuit and history, latency and status-class charts, recent attempts,
 * dead-letter analysis, and the actions. Each action is a form posted here, carried out
 * by the API route that does it for API clients (disable/enable = PATCH endpoint, reset =
 * POST circuit/reset, rotate = POST secret/rotate, requeue = POST /dead-letters/requeue),
 * then back to this page (POST-redirect-GET) with what happened. The requeue's confirmation
 * states what GET /dead-letters/requeue-plan says it would take, and at what pace. The
 * "Replay" section (form and recent replays) is pages/endpoint-replay.ts's. The dead-letter
 * analysis covers the deaths of the latency window (as pages/dead-letters.ts), and says so.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Principal } from "../../api/auth.ts";
import { notFound } from "../../api/errors.ts";
import { answerError, type InProcessResult } from "../../api/in-process.ts";
import type { WhileDisabled } from "../../config.ts";
import { whileDisabledOf, whileDisabledText } from "../../domain/while-disabled.ts";
import { chartHours } from "../chart-ranges.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { CSRF_FIELD } from "../csrf.ts";
import { deliveryFacts } from "../endpoint-form.ts";
import { headersFacts } from "../endpoint-headers-facts.ts";
import { age, badge, count, dash, ms, ownApp, percent, time, windowText } from "../format.ts";
import { dashboardPath, type Html, html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { clippedText } from "../payload-view.ts";
import { ownKey, queryStrings } from "../query.ts";
import { appNameOf, endpointAppId } from "../sql/message-lookup.ts";
import { endpointChartsSection } from "./endpoint-charts.ts";
import { blockedKeysSection } from "./endpoint-ordering.ts";
import { replaySection } from "./endpoint-replay.ts";

/**
 * What an action did, by the code in ?done= (never free text from the URL); `whileDisabled`
 * is the endpoint's effective mode (domain/while-disabled.ts).
 */
const DONE: Record<string, (n: string | undefined, whileDisabled: WhileDisabled) => string> = {
  disabled: (_, mode) => `Endpoint disabled: ${whileDisabledText(mode)}.`,
  enabled: () => "Endpoint enabled.",
  "circuit-reset": () => "Circuit reset to closed; waiting deliveries are due now.",
  "secret-rotated": () =>
    "Signing secret rotated; the previous one keeps signing beside it for 24 hours.",
  requeued: (n) => `${Number(n) || 0} dead letters requeued.`,
  saved: () => "Changes saved.",
  "key-retry": () => "The key's head is due again now; the rest of its key follow it in order.",
  "key-skip": () => "The key's head was skipped (canceled); the next message of its key goes.",
};

/** The API's answer, or the ApiError it stands for (the error page shows it). */
export function ok(res: InProcessResult): InProcessResult {
  if (res.status >= 400) throw answerError(res);
  return res;
}

/** The endpoint's app, if the principal may see it (404 otherwise). */
export async function appOf(deps: DashboardDeps, principal: Principal, endpointId: string) {
  const appId = await endpointAppId(deps.pool, endpointId, ownApp(principal));
  if (!appId) throw notFound("endpoint");
  return appId;
}

export const epPath = (id: string, ...rest: string[]) => dashboardPath(["endpoints", id, ...rest]);

function actionForm(
  endpointId: string,
  action: string,
  label: string,
  csrf: string,
  options: { confirm?: string; danger?: boolean } = {},
): Html {
  return html`<form method="post" action="${epPath(endpointId, action)}"${
    options.confirm ? html` data-confirm="${options.confirm}"` : ""
  }><input type="hidden" name="${CSRF_FIELD}" value="${csrf}"><button type="submit"${
    options.danger ? html` class="danger"` : ""
  }>${label}</button></form>`;
}

/** A pace in words: the strictest rate limit, or none. */
export function paceText(perSecond: number | null, rows: number): string {
  if (perSecond === null || perSecond <= 0) {
    return "The endpoint has no rate limit: they go out as fast as the workers and its in-flight limit allow.";
  }
  const rate =
    perSecond >= 1
      ? `${perSecond.toFixed(perSecond % 1 ? 2 : 0)} per second`
      : `${(perSecond * 60).toFixed(1)} per minute`;
  return `They go out at ${rate} (the endpoint's rate limit), about ${age((rows / perSecond) * 1000)} for all of them.`;
}

/** The API path of one endpoint (and below it). */
export const endpointApi = (appId: string, endpointId: string, rest = "") =>
  `/api/v1/app/${encodeURIComponent(appId)}/endpoint/${encodeURIComponent(endpointId)}${rest}`;

export function registerEndpointPages(app: FastifyInstance, deps: DashboardDeps): void {
  const { calls, redactor } = deps;
  const api = endpointApi;

  app.get<{ Params: { endpointId: string } }>(
    "/endpoints/:endpointId",
    { schema: { hide: true } },
    async (request, reply) => {
      const session = sessionOf(request);
      const { principal, csrfToken } = session;
      const id = request.params.endpointId;
      const appId = await appOf(deps, principal, id);
      const windowMs = deps.config.health.windowMs;
      const hours = chartHours(request.query, windowMs);
      const [endpoint, health, attempts, analysis, appName] = await Promise.all([
        calls.read(principal, "/api/v1/app/:appId/endpoint/:endpointId", {
          appId,
          endpointId: id,
        }),
        calls.read(principal, "/api/v1/app/:appId/endpoint/:endpointId/health", {
          appId,
          endpointId: id,
        }),
        calls.read(
          principal,
          "/api/v1/app/:appId/attempt/endpoint/:endpointId",
          { appId, endpointId: id },
          { limit: 25 },
        ),
        // the deaths of the latency window: the analysis reads each one it covers
        calls.read(
          principal,
          "/api/v1/dead-letters/analysis",
          {},
          { endpoint_id: id, since: new Date(Date.now() - windowMs).toISOString() },
        ),
        appNameOf(deps.pool, appId),
      ]);
      // the custom headers, sensitive values masked by the API
      const headers = await calls.read(
        principal,
        "/api/v1/app/:appId/endpoint/:endpointId/headers",
        {
          appId,
          endpointId: id,
        },
      );
      const e = endpoint;
      const hl = health;
      const done = queryStrings(request.query);
      const doneKey = ownKey(DONE, done.done);
      const mode = whileDisabledOf(
        e.whileDisabled as WhileDisabled | null | undefined,
        deps.config.delivery.whileDisabled,
      );
      const flash = doneKey ? DONE[doneKey]!(done.n, mode) : null;
      const dl = analysis.data[0];
      const circuit = hl.circuit;
      const blocked = await blockedKeysSection(deps, {
        principal,
        csrfToken,
        appId,
        endpointId: id,
      });
      const replay = await replaySection(deps, {
        principal,
        csrfToken,
        endpointId: id,
        limits: hl.limits,
      });
      // the adaptive in-flight limit and why it last moved (docs/adaptive-concurrency.md)
      const conc = hl.limits.concurrency;
      const body = html`<h1>Endpoint <code>${e.id}</code></h1>
${flash && html`<p class="notice" role="status">${flash}</p>`}
<dl class="facts">
  <dt>URL</dt><dd data-testid="url">${redactor.url(e.url)}</dd>
  <dt>Description</dt><dd data-testid="description">${e.description || dash}</dd>
  <dt>App</dt><dd data-testid="app"><a href="${dashboardPath(["endpoints"], { app: appId })}">${appName?.name ?? appId}</a>${
    appName?.uid && appName.uid !== appName.name
      ? html` <span class="muted">(${appName.uid})</span>`
      : ""
  }</dd>
  ${deliveryFacts(e)}
  ${headersFacts(headers)}
  <dt>State</dt><dd>${e.disabled ? badge("disabled", `disabled (${e.disabledReason ?? "operator"})`) : badge("ok", "enabled")}${
    hl.pausedUntil ? html` ${badge("warning", "paused")} until ${time(hl.pausedUntil)}` : ""
  }${
    hl.limits.resumeRoom !== null
      ? html` <span data-testid="resuming">resuming: ${count(hl.limits.resumeRoom)} of ${count(hl.limits.maxInFlight)} in flight</span>`
      : ""
  }${
    e.disabled
      ? html` <span data-testid="held">${count(hl.queue.pending)} held while disabled</span>`
      : ""
  }</dd>
  <dt>While disabled</dt><dd data-testid="while-disabled">${mode}${e.whileDisabled == null ? html` <span class="muted">(server default)</span>` : ""}: ${whileDisabledText(mode)}</dd>
  <dt>Circuit</dt><dd data-testid="circuit">${badge(circuit.state)} ${circuit.consecutiveFailures} consecutive failures (opens at ${circuit.effectiveFailureThreshold})${
    circuit.state !== "closed" && circuit.openUntil
      ? html`; open until ${time(circuit.openUntil)}`
      : ""
  }</dd>
  <dt>Latency (24 h)</dt><dd>p50 ${ms(hl.latency.p50Ms)}, p95 ${ms(hl.latency.p95Ms)}, p99 ${ms(hl.latency.p99Ms)}; success ${percent(hl.latency.successRate)} of ${count(hl.latency.samples)} attempts${hl.slow ? html` ${badge("warning", "slow")}` : ""}</dd>
  <dt>Queue</dt><dd>${count(hl.queue.pending)} waiting, ${count(hl.queue.inFlight)} in flight, ${count(hl.queue.deadLetter)} dead letters; oldest pending ${age(hl.queue.oldestPendingAgeMs)}</dd>
  <dt>Rate limit</dt><dd>${
    hl.limits.ratePerSecond || hl.limits.ratePerMinute || hl.limits.ratePerHour
      ? [
          hl.limits.ratePerSecond && `${hl.limits.ratePerSecond}/s `,
          hl.limits.ratePerMinute && `${hl.limits.ratePerMinute}/min `,
          hl.limits.ratePerHour && `${hl.limits.ratePerHour}/h`,
        ]
      : "none"
  }; at most ${hl.limits.maxInFlight} in flight</dd>
  <dt>In-flight limit</dt><dd><span data-testid="concurrency">${count(conc.current)} of ${count(conc.max)} (${conc.reason}${
    conc.since ? html` since ${time(conc.since)}` : ""
  })</span>${conc.adaptive ? "" : html` <span class="muted">(adaptive concurrency off: maxInFlight alone)</span>`}</dd>
</dl>
<section aria-labelledby="h-actions"><h2 id="h-actions">Actions</h2><div class="actions">
  <a class="button" href="${epPath(id, "edit")}">Edit…</a>
  ${
    e.disabled
      ? actionForm(id, "enable", "Enable", csrfToken)
      : actionForm(id, "disable", "Disable", csrfToken, {
          confirm: `Disable this endpoint? ${whileDisabledText(mode).replace(/^./, (c) => c.toUpperCase())}.`,
          danger: true,
        })
  }
  ${actionForm(id, "reset-circuit", "Reset circuit", csrfToken)}
  <a class="button" href="${epPath(id, "requeue")}">Requeue dead letters (${count(hl.queue.deadLetter)})…</a>
  <a class="button" href="#replay">Replay…</a>
  ${actionForm(id, "rotate-secret", "Rotate secret", csrfToken, {
    confirm: "Rotate the signing secret? The old one keeps signing for 24 hours.",
    danger: true,
  })}
</div></section>
${blocked}
${endpointChartsSection(id, hours, deps.config.health.windowMs)}
${
  dl
    ? html`<section aria-labelledby="h-dead"><h2 id="h-dead">Dead letters</h2>
<p data-testid="dead-analysis">${count(dl.deadCount)} dead in the last ${windowText(windowMs)}, pattern <strong>${String(dl.pattern).replaceAll("_", " ")}</strong>: ${dl.suggestedAction}</p>
<p class="muted">Most common: ${dl.mostCommonStatusCode ?? "no status"}, ${dl.mostCommonError ? clippedText(redactor.text(dl.mostCommonError)) : "no error text"}; first ${time(dl.firstDeadAt)}, last ${time(dl.lastDeadAt)}. ${count(hl.queue.deadLetter)} dead letters in all: <a href="${dashboardPath(["dead-letters"], { endpoint_id: id })}">list them</a>.</p></section>`
    : hl.queue.deadLetter > 0
      ? html`<section aria-labelledby="h-dead"><h2 id="h-dead">Dead letters</h2>
<p data-testid="dead-analysis">None died in the last ${windowText(windowMs)}; ${count(hl.queue.deadLetter)} older: <a href="${dashboardPath(["dead-letters"], { endpoint_id: id })}">list them</a>.</p></section>`
      : ""
}
${replay}
<section aria-labelledby="h-attempts"><h2 id="h-attempts">Recent attempts</h2>
<div class="table-wrap"><table data-testid="attempts">
<thead><tr><th>Time</th><th>Message</th><th class="num">#</th><th>Status</th><th class="num">Latency</th><th>Error or response</th></tr></thead>
<tbody>${attempts.data.map(
        (a) => html`<tr>
  <td>${time(a.timestamp)}</td>
  <td><a href="${dashboardPath(["messages", a.msgId])}">${a.msgId}</a></td>
  <td class="num">${a.attemptNumber}</td>
  <td>${badge(a.statusText === "success" ? "ok" : "critical", a.responseStatusCode ? String(a.responseStatusCode) : String(a.errorKind ?? "error"))}</td>
  <td class="num">${ms(a.responseDurationMs)}</td>
  <td class="text">${a.error ? clippedText(redactor.text(a.error)) : a.response ? redactor.text(String(a.response).slice(0, 200)) : ""}</td>
</tr>`,
      )}</tbody></table></div>
${attempts.data.length === 0 ? html`<p class="muted">No attempts yet.</p>` : ""}
</section>
<section aria-labelledby="h-circuit"><h2 id="h-circuit">Circuit history</h2>
${
  (circuit.history ?? []).length === 0
    ? html`<p class="muted">No transitions yet.</p>`
    : html`<ul class="timeline" data-testid="circuit-history">${(circuit.history ?? []).map(
        (t) =>
          html`<li>${time(t.at)}: ${badge(t.from)} → ${badge(t.to)} <span class="muted">${t.reason}</span></li>`,
      )}</ul>`
}
</section>`;
      return sendPage(reply, {
        title: `Endpoint ${e.id}`,
        principal,
        csrfToken,
        active: "/dashboard/endpoints",
        charts: true,
        body,
      });
    },
  );

  type Req = FastifyRequest<{ Params: { endpointId: string } }>;
  const action =
    (fn: (principal: Principal, appId: string, id: string) => Promise<string>) =>
    async (request: Req, reply: FastifyReply) => {
      const { principal } = sessionOf(request);
      const id = request.params.endpointId;
      const appId = await appOf(deps, principal, id);
      const done = await fn(principal, appId, id);
      return reply.redirect(`${epPath(id)}?${done}`, 303);
    };
  const opts = { schema: { hide: true } };

  app.post<{ Params: { endpointId: string } }>(
    "/endpoints/:endpointId/disable",
    opts,
    action(async (p, appId, id) => {
      ok(await calls.call(p, "PATCH", api(appId, id), { disabled: true }));
      return "done=disabled";
    }),
  );
  app.post<{ Params: { endpointId: string } }>(
    "/endpoints/:endpointId/enable",
    opts,
    action(async (p, appId, id) => {
      ok(await calls.call(p, "PATCH", api(appId, id), { disabled: false }));
      return "done=enabled";
    }),
  );
  app.post<{ Params: { endpointId: string } }>(
    "/endpoints/:endpointId/reset-circuit",
    opts,
    action(async (p, appId, id) => {
      ok(await calls.call(p, "POST", api(appId, id, "/circuit/reset")));
      return "done=circuit-reset";
    }),
  );
  app.post<{ Params: { endpointId: string } }>(
    "/endpoints/:endpointId/rotate-secret",
    opts,
    action(async (p, appId, id) => {
      ok(await calls.call(p, "POST", api(appId, id, "/secret/rotate"), {}));
      return "done=secret-rotated";
    }),
  );
  app.post<{ Params: { endpointId: string } }>(
    "/endpoints/:endpointId/requeue",
    opts,
    action(async (p, _appId, id) => {
      const res = ok(
        await calls.call(p, "POST", "/api/v1/dead-letters/requeue", { endpointId: id }),
      );
      return `done=requeued&n=${Number(res.body.requeued) || 0}`;
    }),
  );

  // The confirmation: how many rows a requeue takes and the pace they go out at.
  app.get<{ Params: { endpointId: string } }>(
    "/endpoints/:endpointId/requeue",
    opts,
    async (request, reply) => {
      const session = sessionOf(request);
      const { principal, csrfToken } = session;
      const id = request.params.endpointId;
      const appId = await appOf(deps, principal, id);
      const endpoint = await calls.read(principal, "/api/v1/app/:appId/endpoint/:endpointId", {
        appId,
        endpointId: id,
      });
      const planned = await calls.read(
        principal,
        "/api/v1/dead-letters/requeue-plan",
        {},
        { endpoint_id: id },
      );
      const plan = planned.endpoints[0];
      const rows = plan?.deliveries ?? 0;
      const body = html`<h1>Requeue dead letters</h1>
<p>Endpoint <a href="${epPath(id)}"><code>${id}</code></a>: ${redactor.url(endpoint.url)}</p>
${
  rows === 0
    ? html`<p data-testid="requeue-plan">This endpoint has no dead letters to requeue.</p>`
    : html`<p data-testid="requeue-plan">This requeues <strong>${count(rows)}</strong> dead ${rows === 1 ? "letter" : "letters"} with a fresh attempt budget and the same message ids. ${paceText(plan!.perSecond, rows)}</p>
<form method="post" action="${epPath(id, "requeue")}">
  <input type="hidden" name="${CSRF_FIELD}" value="${csrfToken}">
  <button type="submit" class="primary">Requeue ${count(rows)}</button>
  <a href="${epPath(id)}">Cancel</a>
</form>`
}`;
      return sendPage(reply, {
        title: "Requeue dead letters",
        principal,
        csrfToken,
        active: "/dashboard/endpoints",
        body,
      });
    },
  );
}
