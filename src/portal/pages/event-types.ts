/**
 * GET /portal/event-types: the event-type catalogue (docs/portal.md, "Pages"), read through
 * the API: each type's description, its JSON schema and the example a test event sends.
 */
import type { FastifyInstance } from "fastify";
import { exampleOf } from "../../api/routes/send-example.ts";
import { html } from "../../dashboard/html.ts";
import { type PortalDeps, sessionOf } from "../context.ts";
import { badge } from "../views.ts";

const pretty = (json: string) => JSON.stringify(JSON.parse(json), null, 2);

export function registerEventTypePage(app: FastifyInstance, deps: PortalDeps): void {
  app.get("/event-types", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    // (as many as the endpoint form offers, dashboard/endpoint-form.ts's CATALOG_QUERY)
    const page = await deps.read(session, "/api/v1/event-type", {}, { limit: 250 });
    return deps.page(reply, {
      session,
      csrfToken: session.csrfToken,
      title: "Event types",
      active: "/portal/event-types",
      body: html`<h1>Event types</h1>
<p>The events your endpoints can subscribe to. An endpoint with no event types chosen receives all of them.</p>
${page.data.length === 0 ? html`<p class="muted">No event types are listed.</p>` : ""}
${page.data.map((t) => {
  const schemas = t.schemas === null ? null : JSON.stringify(t.schemas);
  const example = exampleOf(schemas);
  return html`<section class="event-type">
<h2><code>${t.name}</code>${t.deprecated ? html` ${badge("warning", "deprecated")}` : ""}</h2>
<p>${t.description}</p>
${schemas && html`<details><summary>Schema</summary><pre>${pretty(schemas)}</pre></details>`}
${example && html`<h3>Example</h3><pre>${pretty(example)}</pre>`}
</section>`;
})}`,
    });
  });
}
