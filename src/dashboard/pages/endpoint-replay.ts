/**
 * The dashboard's "Replay" action of one endpoint (docs/dashboard.md, "Replaying an
 * endpoint"), each step one call of the API's recovery routes (docs/recovery.md):
 *   GET  /dashboard/endpoints/{ep}/replay                 the form and the endpoint's replays
 *   POST /dashboard/endpoints/{ep}/replay                 intent=count: a dry run, the form
 *                                                         again with its count; intent=start:
 *                                                         the task, then its progress view;
 *                                                         a refusal: the form again with the
 *                                                         API's words, at the API's status
 *   GET  /dashboard/endpoints/{ep}/replay/{task}          one task's progress
 *   POST /dashboard/endpoints/{ep}/replay/{task}/cancel   cancel it
 * The endpoint page (pages/endpoint.ts) shows the same form and list (replaySection).
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import type { Principal } from "../../api/auth.ts";
import { notFound } from "../../api/errors.ts";
import { answerId } from "../../api/in-process.ts";
import { ApiError } from "../../errors.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { field } from "../form-body.ts";
import { type Html, html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { queryStrings } from "../query.ts";
import {
  defaultPace,
  newReplayValues,
  type ReplayFormValues,
  replayForm,
  replayRequestOfForm,
  replayValuesOfForm,
} from "../replay-form.ts";
import { countNotice, recentReplays, taskProgress, taskTable } from "../replay-view.ts";
import { appOf, endpointApi, epPath, ok } from "./endpoint.ts";

type P = { Params: { endpointId: string } };
type T = { Params: { endpointId: string; taskId: string } };

/** What a replay section needs to know of the page it is on. */
interface SectionInput {
  principal: Principal;
  csrfToken: string;
  endpointId: string;
  /** the endpoint's rate limits, as its health shows them */
  limits: {
    ratePerSecond: number | null;
    ratePerMinute: number | null;
    ratePerHour: number | null;
  };
  values?: ReplayFormValues;
  error?: string | null;
  /** a dry run's count, shown above the form */
  counted?: Html | null;
  /** false on the replay page, whose own heading says it */
  heading?: boolean;
}

/** The replay form and the endpoint's recent replays (the endpoint page's "Replay" section). */
export async function replaySection(deps: DashboardDeps, s: SectionInput): Promise<Html> {
  const id = s.endpointId;
  const tasks = await recentReplays(
    (query) => deps.calls.read(s.principal, "/api/v1/background-task", {}, query),
    id,
  );
  return html`${
    s.heading === false
      ? html`<section aria-label="Replay" id="replay">`
      : html`<section aria-labelledby="h-replay" id="replay"><h2 id="h-replay">Replay</h2>`
  }
<p class="muted">Send this endpoint's messages of a time window again, as a background task at a steady pace. Each keeps its <code>webhook-id</code>, so receivers that deduplicate see a repeat, and its attempts are marked as replays.</p>
${s.counted ?? ""}
${replayForm({
  action: epPath(id, "replay"),
  csrfToken: s.csrfToken,
  values: s.values ?? newReplayValues(deps.config.retention.payloadMs),
  pace: defaultPace(s.limits, deps.config.worker.replayRatePerSecond),
  error: s.error ?? null,
})}
${s.heading === false ? html`<h2>Recent replays</h2>` : html`<h3>Recent replays</h3>`}
${taskTable(tasks, (task) => epPath(id, "replay", task))}
</section>`;
}

export function registerEndpointReplayPages(app: FastifyInstance, deps: DashboardDeps): void {
  const { calls } = deps;
  const opts = { schema: { hide: true } };

  /** The replay page: the endpoint's name, then the section; `status` the API's on a refusal. */
  async function sendReplayPage(
    reply: FastifyReply,
    session: { principal: Principal; csrfToken: string },
    appId: string,
    id: string,
    extra: Pick<SectionInput, "values" | "error" | "counted">,
    status = 200,
  ) {
    const ids = { appId, endpointId: id };
    const [endpoint, health] = await Promise.all([
      calls.read(session.principal, "/api/v1/app/:appId/endpoint/:endpointId", ids),
      calls.read(session.principal, "/api/v1/app/:appId/endpoint/:endpointId/health", ids),
    ]);
    const section = await replaySection(deps, {
      ...session,
      endpointId: id,
      limits: health.limits,
      ...extra,
      heading: false,
    });
    return sendPage(
      reply,
      {
        title: `Replay ${id}`,
        principal: session.principal,
        csrfToken: session.csrfToken,
        active: "/dashboard/endpoints",
        body: html`<h1>Replay</h1>
<p>Endpoint <a href="${epPath(id)}"><code>${id}</code></a>: ${deps.redactor.url(endpoint.url)}</p>
${section}`,
      },
      status,
    );
  }

  app.get<P & { Querystring: Record<string, unknown> }>(
    "/endpoints/:endpointId/replay",
    opts,
    async (request, reply) => {
      const session = sessionOf(request);
      const id = request.params.endpointId;
      const appId = await appOf(deps, session.principal, id);
      const kind = queryStrings(request.query).kind;
      return sendReplayPage(reply, session, appId, id, {
        values: newReplayValues(deps.config.retention.payloadMs, kind),
      });
    },
  );

  app.post<P>("/endpoints/:endpointId/replay", opts, async (request, reply) => {
    const session = sessionOf(request);
    const id = request.params.endpointId;
    const appId = await appOf(deps, session.principal, id);
    // Enter in a field presses the first button, "Count first": only the other one starts
    const dryRun = field(request.body, "intent") !== "start";
    const values = replayValuesOfForm(request.body);
    let taskId: string;
    try {
      const asked = replayRequestOfForm(request.body, dryRun);
      const made = ok(
        await calls.call(
          session.principal,
          "POST",
          endpointApi(appId, id, `/${asked.kind}`),
          asked.body,
        ),
      );
      taskId = answerId(made.body);
    } catch (err) {
      // a refusal of what was typed (4xx): the form again; anything else is an error page
      if (!(err instanceof ApiError) || err.status >= 500 || err.status === 404) throw err;
      return sendReplayPage(reply, session, appId, id, { values, error: err.message }, err.status);
    }
    if (!dryRun) return reply.redirect(epPath(id, "replay", taskId), 303);
    const task = await calls.read(session.principal, "/api/v1/background-task/:taskId", {
      taskId,
    });
    return sendReplayPage(reply, session, appId, id, { values, counted: countNotice(task) });
  });

  /** The task, if it is a task of this endpoint within the principal's reach (404 otherwise). */
  async function taskOf(principal: Principal, id: string, taskId: string) {
    const task = await calls.read(principal, "/api/v1/background-task/:taskId", { taskId });
    if (task.data.endpointId !== id) throw notFound("background task");
    return task;
  }

  app.get<T>("/endpoints/:endpointId/replay/:taskId", opts, async (request, reply) => {
    const session = sessionOf(request);
    const { endpointId: id, taskId } = request.params;
    await appOf(deps, session.principal, id);
    const task = await taskOf(session.principal, id, taskId);
    const canceled = queryStrings(request.query).done === "canceled";
    return sendPage(reply, {
      title: `Replay ${task.id}`,
      principal: session.principal,
      csrfToken: session.csrfToken,
      active: "/dashboard/endpoints",
      body: html`<h1>Replay <code>${task.id}</code></h1>
<p>Endpoint <a href="${epPath(id)}"><code>${id}</code></a> · <a href="${epPath(id, "replay")}">New replay</a></p>
${canceled && html`<p class="notice" role="status">Replay canceled: what it had sent stays sent.</p>`}
${taskProgress(task, {
  selfUrl: epPath(id, "replay", task.id),
  cancelAction: epPath(id, "replay", task.id, "cancel"),
  csrfToken: session.csrfToken,
})}`,
    });
  });

  app.post<T>("/endpoints/:endpointId/replay/:taskId/cancel", opts, async (request, reply) => {
    const session = sessionOf(request);
    const { endpointId: id, taskId } = request.params;
    await appOf(deps, session.principal, id);
    const task = await taskOf(session.principal, id, taskId);
    // a task that ended meanwhile is a 409 with the API's words (the error page)
    ok(
      await calls.call(
        session.principal,
        "POST",
        `/api/v1/background-task/${encodeURIComponent(task.id)}/cancel`,
      ),
    );
    return reply.redirect(`${epPath(id, "replay", task.id)}?done=canceled`, 303);
  });
}
