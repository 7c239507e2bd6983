/**
 * The dashboard's endpoint edit form (docs/dashboard.md, "Editing an endpoint"):
 *   GET  /dashboard/endpoints/{ep}/edit   the form (src/dashboard/endpoint-form.ts)
 *   POST /dashboard/endpoints/{ep}/edit   PATCH the endpoint through the API, then back to
 *                                         its page; a refusal shows the form again with the
 *                                         API's words, at the API's status
 */
import type { FastifyInstance, FastifyReply } from "fastify";
import type { Principal } from "../../api/auth.ts";
import { validationError } from "../../api/errors.ts";
import { ApiError } from "../../errors.ts";
import { type DashboardDeps, sessionOf } from "../context.ts";
import { CSRF_FIELD } from "../csrf.ts";
import {
  CATALOG_QUERY,
  type EndpointFormValues,
  endpointBodyOfForm,
  endpointForm,
  valuesOfEndpoint,
  valuesOfForm,
} from "../endpoint-form.ts";
import {
  headersFieldset,
  headersText,
  headersTextOfForm,
  parseHeadersText,
} from "../endpoint-headers-form.ts";
import { html } from "../html.ts";
import { sendPage } from "../layout.ts";
import { appOf, endpointApi, epPath, ok } from "./endpoint.ts";

type P = { Params: { endpointId: string } };

export function registerEndpointEditPage(app: FastifyInstance, deps: DashboardDeps): void {
  const { calls } = deps;

  async function sendForm(
    reply: FastifyReply,
    session: { principal: Principal; csrfToken: string },
    id: string,
    values: EndpointFormValues,
    headers: string,
    error: ApiError | null,
  ) {
    const catalog = (await calls.read(session.principal, "/api/v1/event-type", {}, CATALOG_QUERY))
      .data;
    return sendPage(
      reply,
      {
        title: `Edit endpoint ${id}`,
        principal: session.principal,
        csrfToken: session.csrfToken,
        active: "/dashboard/endpoints",
        body: html`<h1>Edit endpoint <code>${id}</code></h1>${endpointForm({
          action: epPath(id, "edit"),
          csrfField: CSRF_FIELD,
          csrfToken: session.csrfToken,
          cancelHref: epPath(id),
          values,
          catalog,
          error: error?.message ?? null,
          policy: true,
          extra: headersFieldset(headers),
        })}`,
      },
      error?.status ?? 200,
    );
  }

  app.get<P>("/endpoints/:endpointId/edit", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const id = request.params.endpointId;
    const appId = await appOf(deps, session.principal, id);
    const e = await calls.read(session.principal, "/api/v1/app/:appId/endpoint/:endpointId", {
      appId,
      endpointId: id,
    });
    // the headers as the API answers them: sensitive values masked
    const headers = await calls.read(
      session.principal,
      "/api/v1/app/:appId/endpoint/:endpointId/headers",
      { appId, endpointId: id },
    );
    return sendForm(reply, session, id, valuesOfEndpoint(e), headersText(headers.headers), null);
  });

  app.post<P>("/endpoints/:endpointId/edit", { schema: { hide: true } }, async (request, reply) => {
    const session = sessionOf(request);
    const id = request.params.endpointId;
    const appId = await appOf(deps, session.principal, id);
    const headersTyped = headersTextOfForm(request.body);
    try {
      const headers = headersTyped === null ? null : parseHeadersText(headersTyped);
      if (headers && "error" in headers) throw validationError(String(headers.error));
      ok(
        await calls.call(
          session.principal,
          "PATCH",
          endpointApi(appId, id),
          endpointBodyOfForm(request.body),
        ),
      );
      // PUT: the headers as typed replace the stored ones; a *** keeps a sensitive value
      if (headers)
        ok(
          await calls.call(session.principal, "PUT", `${endpointApi(appId, id)}/headers`, {
            headers,
          }),
        );
    } catch (err) {
      // a refusal of what was typed (422, 409, 400): the form again; anything else is an error page
      if (!(err instanceof ApiError) || err.status >= 500 || err.status === 404) throw err;
      return sendForm(reply, session, id, valuesOfForm(request.body), headersTyped ?? "", err);
    }
    return reply.redirect(`${epPath(id)}?done=saved`, 303);
  });
}
