/**
 * How the dashboard and the portal show replay tasks (docs/dashboard.md, "Replaying an
 * endpoint"): a dry run's count, one task's progress (polled by htmx while it runs, with a
 * plain refresh link without it), and an endpoint's recent tasks. Tasks are read from the
 * API's background-task routes (docs/recovery.md) as Svix's BackgroundTaskOut.
 */
import type { TaskResponse } from "../api/task-responses.ts";
import { age, badge, count, time } from "./format.ts";
import { type Html, html } from "./html.ts";
import { REPLAY_KINDS, rateText } from "./replay-form.ts";

/** A task's kind in the form's words. */
export function kindText(task: string): string {
  return Object.values(REPLAY_KINDS).find((k) => k.task === task)?.label ?? task;
}

/** A task's state as a badge (colours from the dashboard's fixed set). */
export function taskBadge(status: string): Html {
  const cls =
    status === "running"
      ? "pending"
      : status === "finished"
        ? "delivered"
        : status === "failed"
          ? "critical"
          : "canceled";
  return badge(cls, status);
}

/** "12 of 40", or "12 (counting…)" before the runner has counted the window. */
const doneText = (t: TaskResponse) =>
  t.data.total === null
    ? html`${count(t.data.done)} <span class="muted">(counting…)</span>`
    : html`${count(t.data.done)} of ${count(t.data.total)}`;

/** The window in words. */
const windowText = (t: TaskResponse) => html`${time(t.data.since)} to ${time(t.data.until)}`;

/** The bulk replay's filters in words, or nothing. */
function filtersText(t: TaskResponse): string {
  const f = t.data.filters;
  return [
    f.eventTypes?.length && `event types ${f.eventTypes.join(", ")}`,
    f.channel && `channel ${f.channel}`,
    f.tag && `tag ${f.tag}`,
    f.status?.length && `deliveries ${f.status.join(", ").replaceAll("_", " ")}`,
    f.statusCodeClass !== null && `status ${f.statusCodeClass}s`,
  ]
    .filter(Boolean)
    .join("; ");
}

/** Seconds as "about 12 min", or "under a second". */
const duration = (seconds: number): string =>
  seconds < 1 ? "under a second" : `about ${age(seconds * 1000)}`;

/** What a dry run found: how many, and how long they would take at the task's pace. */
export function countNotice(t: TaskResponse): Html {
  const n = t.data.total ?? 0;
  return html`<p class="notice" role="status" data-testid="replay-count">${kindText(t.task)}, ${windowText(t)}: <strong>${count(n)}</strong> ${
    n === 1 ? "delivery" : "deliveries"
  } would be sent${
    n > 0 ? `, at ${rateText(t.data.ratePerSecond)}: ${duration(n / t.data.ratePerSecond)}` : ""
  }. Nothing was sent; start the replay below to send them.</p>`;
}

export interface ProgressOptions {
  /** this view's URL (htmx polls it while the task runs) */
  selfUrl: string;
  /** where a cancel posts; none: no cancel button (the portal link may not allow it) */
  cancelAction: string | null;
  csrfToken: string;
}

/**
 * One task: state, progress, pace, window, filters, and a cancel button while it runs.
 * While it runs, the section reloads itself every 2 s (htmx swaps in the same section of a
 * fresh page); a finished one carries no trigger, so the polling stops with it.
 */
export function taskProgress(t: TaskResponse, o: ProgressOptions): Html {
  const running = t.status === "running";
  const left =
    running && t.data.total !== null
      ? Math.max(0, t.data.total - t.data.done) / t.data.ratePerSecond
      : null;
  const filters = filtersText(t);
  const poll = running
    ? html` hx-get="${o.selfUrl}" hx-trigger="every 2s" hx-select="#task-progress" hx-swap="outerHTML"`
    : "";
  return html`<section id="task-progress" data-testid="task-progress" data-status="${t.status}" aria-live="polite"${poll}>
<dl class="facts">
  <dt>State</dt><dd data-testid="task-status">${taskBadge(t.status)}${t.data.dryRun ? html` <span class="muted">count only: nothing sent</span>` : ""}</dd>
  <dt>Progress</dt><dd data-testid="task-done">${doneText(t)}${
    t.data.total ? html` <progress max="${t.data.total}" value="${t.data.done}"></progress>` : ""
  }${left !== null ? html` <span class="muted">${duration(left)} left</span>` : ""}</dd>
  <dt>Pace</dt><dd data-testid="task-rate">${rateText(t.data.ratePerSecond)}</dd>
  <dt>What</dt><dd>${kindText(t.task)}</dd>
  <dt>Messages created</dt><dd>${windowText(t)}</dd>
  ${filters && html`<dt>Filters</dt><dd>${filters}</dd>`}
  <dt>Started</dt><dd>${time(t.createdAt)}</dd>
  <dt>${running ? "Updated" : "Ended"}</dt><dd>${time(running ? t.updatedAt : (t.finishedAt ?? t.updatedAt))}</dd>
  ${t.data.error && html`<dt>Error</dt><dd class="error">${t.data.error}</dd>`}
</dl>
${
  running &&
  html`<div class="actions">${
    o.cancelAction &&
    html`<form method="post" action="${o.cancelAction}" data-confirm="Cancel this replay? What it has sent stays sent."><input type="hidden" name="_csrf" value="${o.csrfToken}"><button type="submit" class="danger">Cancel replay</button></form>`
  }<a class="button" href="${o.selfUrl}">Refresh</a></div>`
}
</section>`;
}

/** An endpoint's recent tasks, newest first, each linking to its progress view. */
export function taskTable(tasks: readonly TaskResponse[], hrefOf: (id: string) => string): Html {
  if (tasks.length === 0) return html`<p class="muted">No replays of this endpoint yet.</p>`;
  return html`<div class="table-wrap"><table data-testid="replay-tasks">
<thead><tr><th>Started</th><th>What</th><th class="hide-narrow">Messages created</th><th>State</th><th class="num">Sent</th><th class="num hide-narrow">Pace</th></tr></thead>
<tbody>${tasks.map(
    (t) => html`<tr>
  <td><a href="${hrefOf(t.id)}">${time(t.createdAt)}</a></td>
  <td>${kindText(t.task)}</td>
  <td class="hide-narrow">${windowText(t)}</td>
  <td>${taskBadge(t.status)}</td>
  <td class="num">${doneText(t)}</td>
  <td class="num hide-narrow">${rateText(t.data.ratePerSecond)}</td>
</tr>`,
  )}</tbody></table></div>`;
}

interface TaskPage {
  data: TaskResponse[];
  done: boolean;
  iterator: string | null;
}

/** The endpoint's latest replays (dry runs left out), newest first. */
export async function recentReplays(
  readPage: (query: { limit: number; endpoint_id: string; dry_run: "false" }) => Promise<TaskPage>,
  endpointId: string,
  o: { limit?: number } = {},
): Promise<TaskResponse[]> {
  const page = await readPage({ limit: o.limit ?? 10, endpoint_id: endpointId, dry_run: "false" });
  return page.data;
}
