/**
 * The portal's "Replay" action of one endpoint of the session's app (docs/portal.md,
 * "Replaying an endpoint"): the dashboard's form and views (dashboard/replay-form.ts,
 * replay-view.ts), each step one call of the API's recovery routes as the session's app,
 * so another app's endpoint or task is a 404 like everywhere else in the portal:
 *   GET  /portal/endpoints/{ep}/replay                 the form and the endpoint's replays
 *   POST /portal/endpoints/{ep}/replay                 intent=count: a dry run and its count;
 *                                                      intent=start: the task, then its view;
 *                                                      a refusal: the form with the API's words
 *   GET  /portal/endpoints/{ep}/replay/{task}          one task's progress
 *   POST /portal/endpoints/{ep}/replay/{task}/cancel   cancel it
 * Counting, starting and canceling send messages again, so they need the link's
 * CreateAttempts capability (as a resend does); seeing replays needs only a session.
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import { notFound } from "../../api/errors.ts";
import type { EndpointHealthResponse } from "../../api/health-responses.ts";
import { answerId } from "../../api/in-process.ts";
import { field } from "../../dashboard/form-body.ts";
import { type Html, html } from "../../dashboard/html.ts";
import { queryStrings } from "../../dashboard/query.ts";
import {
  defaultPace,
  newReplayValues,
  type ReplayFormValues,
  replayForm,
  replayRequestOfForm,
  replayValuesOfForm,
} from "../../dashboard/replay-form.ts";
import {
  countNotice,
  recentReplays,
  taskProgress,
  taskTable,
} from "../../dashboard/replay-view.ts";
import { ApiError } from "../../errors.ts";
import { can, type PortalDeps, requireCan, sessionOf } from "../context.ts";
import { portalPath } from "../layout.ts";
import type { PortalSession } from "../session.ts";
import { appApi } from "./endpoints.ts";

type P = { Params: { endpointId: string } };
type T = { Params: { endpointId: string; taskId: string } };

const replayPath = (endpointId: string, ...rest: string[]) =>
  portalPath(["endpoints", endpointId, "replay", ...rest]);

interface SectionInput {
  endpointId: string;
  limits: EndpointHealthResponse["limits"];
  values?: ReplayFormValues;
  error?: string | null;
  counted?: Html | null;
  /** false on the replay page, whose own heading says it */
  heading?: boolean;
}

/** The replay form (if the link allows it) and the endpoint's recent replays. */
export async function portalReplaySection(
  deps: PortalDeps,
  session: PortalSession,
  s: SectionInput,
): Promise<Html> {
  const id = s.endpointId;
  const tasks = await recentReplays(
    (query) => deps.read(session, "/api/v1/background-task", {}, query),
    id,
  );
  return html`${
    s.heading === false
      ? html`<section aria-label="Replay" id="replay">`
      : html`<section aria-labelledby="h-replay" id="replay"><h2 id="h-replay">Replay</h2>`
  }
<p class="muted">Send this endpoint's messages of a time window again, at a steady pace. Each keeps its <code>webhook-id</code>, so a receiver that deduplicates sees a repeat.</p>
${s.counted ?? ""}
${
  can(session, "createAttempts")
    ? replayForm({
        action: replayPath(id),
        csrfToken: session.csrfToken,
        values: s.values ?? newReplayValues(deps.config.retention.payloadMs),
        pace: defaultPace(s.limits, deps.config.worker.replayRatePerSecond),
        error: s.error ?? null,
      })
    : html`<p class="muted">This link does not allow sending messages again.</p>`
}
${s.heading === false ? html`<h2>Recent replays</h2>` : html`<h3>Recent replays</h3>`}
${taskTable(tasks, (task) => replayPath(id, task))}
</section>`;
}

export function registerEndpointReplayPages(app: FastifyInstance, deps: PortalDeps): void {
  const opts = { schema: { hide: true } };

  /** The endpoint of the session's app (a 404 for any other), and its health. */
  async function endpointOf(session: PortalSession, endpointId: string) {
    const e = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId", {
      appId: session.appId,
      endpointId,
    });
    const h = await deps.read(session, "/api/v1/app/:appId/endpoint/:endpointId/health", {
      appId: session.appId,
      endpointId: e.id,
    });
    return { e, h };
  }

  async function sendReplayPage(
    reply: FastifyReply,
    session: PortalSession,
    endpointId: string,
    extra: Pick<SectionInput, "values" | "error" | "counted">,
    status = 200,
  ) {
    const { e, h } = await endpointOf(session, endpointId);
    const section = await portalReplaySection(deps, session, {
      endpointId: e.id,
      limits: h.limits,
      ...extra,
      heading: false,
    });
    return deps.page(
      reply,
      {
        session,
        csrfToken: session.csrfToken,
        title: "Replay",
        active: "/portal/endpoints",
        body: html`<h1>Replay</h1>
<p>Endpoint <a href="${portalPath(["endpoints", e.id])}"><code>${deps.redactor.url(e.url)}</code></a></p>
${section}`,
      },
      status,
    );
  }

  app.get<P>("/endpoints/:endpointId/replay", opts, async (request, reply) => {
    const session = sessionOf(request);
    const kind = queryStrings(request.query).kind;
    return sendReplayPage(reply, session, request.params.endpointId, {
      values: newReplayValues(deps.config.retention.payloadMs, kind),
    });
  });

  app.post<P>("/endpoints/:endpointId/replay", opts, async (request, reply) => {
    const session = sessionOf(request);
    requireCan(session, "createAttempts");
    const { e } = await endpointOf(session, request.params.endpointId);
    // Enter in a field presses the first button, "Count first": only the other one starts
    const dryRun = field(request.body, "intent") !== "start";
    const values = replayValuesOfForm(request.body);
    let taskId: string;
    try {
      const asked = replayRequestOfForm(request.body, dryRun);
      const made = await deps.api(
        session,
        "POST",
        appApi(session, "endpoint", e.id, asked.kind),
        asked.body,
      );
      taskId = answerId(made);
    } catch (err) {
      if (!(err instanceof ApiError) || err.status >= 500 || err.status === 404) throw err;
      return sendReplayPage(reply, session, e.id, { values, error: err.message }, err.status);
    }
    if (!dryRun) return reply.redirect(replayPath(e.id, taskId), 303);
    const task = await deps.read(session, "/api/v1/background-task/:taskId", { taskId });
    return sendReplayPage(reply, session, e.id, { values, counted: countNotice(task) });
  });

  /** A task of this endpoint of the session's app (the API scopes it; 404 otherwise). */
  async function taskOf(session: PortalSession, endpointId: string, taskId: string) {
    const task = await deps.read(session, "/api/v1/background-task/:taskId", { taskId });
    if (task.data.endpointId !== endpointId || task.data.appId !== session.appId)
      throw notFound("background task");
    return task;
  }

  app.get<T>("/endpoints/:endpointId/replay/:taskId", opts, async (request, reply) => {
    const session = sessionOf(request);
    const { e } = await endpointOf(session, request.params.endpointId);
    const task = await taskOf(session, e.id, request.params.taskId);
    const canceled = queryStrings(request.query).done === "canceled";
    return deps.page(reply, {
      session,
      csrfToken: session.csrfToken,
      title: "Replay",
      active: "/portal/endpoints",
      body: html`<h1>Replay</h1>
<p>Endpoint <a href="${portalPath(["endpoints", e.id])}"><code>${deps.redactor.url(e.url)}</code></a> · <a href="${replayPath(e.id)}">New replay</a></p>
${canceled && html`<p class="notice" role="status">Replay canceled: what it had sent stays sent.</p>`}
${taskProgress(task, {
  selfUrl: replayPath(e.id, task.id),
  cancelAction: can(session, "createAttempts") ? replayPath(e.id, task.id, "cancel") : null,
  csrfToken: session.csrfToken,
})}`,
    });
  });

  app.post<T>("/endpoints/:endpointId/replay/:taskId/cancel", opts, async (request, reply) => {
    const session = sessionOf(request);
    requireCan(session, "createAttempts");
    const { e } = await endpointOf(session, request.params.endpointId);
    const task = await taskOf(session, e.id, request.params.taskId);
    await deps.api(
      session,
      "POST",
      `/api/v1/background-task/${encodeURIComponent(task.id)}/cancel`,
    );
    return reply.redirect(`${replayPath(e.id, task.id)}?done=canceled`, 303);
  });
}
