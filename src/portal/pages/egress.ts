/**
 * GET /portal/egress: the egress pools and the public IPs receivers see (docs/egress.md),
 * read through the API's GET /api/v1/egress, so a tenant can copy them into a receiver's
 * allowlist; and which pool the app's endpoints use unless they name their own.
 */
import type { FastifyInstance } from "fastify";
import { html } from "../../dashboard/html.ts";
import { type PortalDeps, sessionOf } from "../context.ts";

export function registerEgressPage(app: FastifyInstance, deps: PortalDeps): void {
  app.get("/egress", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const egress = await deps.read(session, "/api/v1/egress", {});
    return deps.page(reply, {
      session,
      csrfToken: session.csrfToken,
      title: "Egress IPs",
      active: "/portal/egress",
      body: html`<h1>Egress IPs</h1>
<p>Deliveries leave from the addresses below. A receiver that accepts requests only from listed addresses (an IP allowlist) needs those of the pool your endpoint uses: an endpoint's <code>egressPool</code>, else its application's.</p>
${
  egress.data.length === 0
    ? html`<p class="muted">This server declares no egress pools: deliveries leave ${egress.defaultRoute === "proxy" ? "through its proxy" : "from its own address"}; ask its operator for the addresses.</p>`
    : html`<div class="table-wrap"><table>
<thead><tr><th>Pool</th><th>Public IPs</th></tr></thead>
<tbody>${egress.data.map(
        (p) =>
          html`<tr><td class="text"><code class="whole">${p.name}</code>${
            p.description && html`<br><span class="muted">${p.description}</span>`
          }</td><td class="whole">${
            p.publicIps.length === 0
              ? html`<span class="muted">none declared</span>`
              : p.publicIps.map((ip, i) => html`${i > 0 ? html`<br>` : ""}<code>${ip}</code>`)
          }</td></tr>`,
      )}</tbody>
</table></div>`
}`,
    });
  });
}
