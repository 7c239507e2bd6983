/**
 * The egress part of the endpoint form (docs/egress.md), for the dashboard and the portal:
 * the egress pool, the endpoint's own proxy, and mTLS. Secrets never go to the browser: the
 * proxy URL is shown with its password as `***` (posting it back keeps the password, as the
 * API does), and of a client certificate only that one is set: empty certificate and key
 * fields keep it, "remove" clears it. The CA bundle is not a secret and is shown as is.
 *
 * A post changes egress only when the form showed these fields (`egressFields`), so a form
 * or client that never did leaves them alone.
 */
import { field } from "./form-body.ts";
import { type Html, html } from "./html.ts";

export interface EgressFormValues {
  egressPool: string;
  /** as the API shows it: its password masked */
  proxyUrl: string;
  hasClientCert: boolean;
  tlsCa: string;
}

export const NO_EGRESS: EgressFormValues = {
  egressPool: "",
  proxyUrl: "",
  hasClientCert: false,
  tlsCa: "",
};

const text = (v: unknown): string => (typeof v === "string" ? v : "");

/** The fields of an endpoint as the API shows it. */
export function egressValuesOfEndpoint(e: Record<string, unknown>): EgressFormValues {
  return {
    egressPool: text(e.egressPool),
    proxyUrl: text(e.proxyUrl),
    hasClientCert: typeof e.tlsClientCert === "string",
    tlsCa: text(e.tlsCa),
  };
}

/** The fields as posted (to show the form again after a refusal). */
export function egressValuesOfForm(body: unknown): EgressFormValues {
  return {
    egressPool: field(body, "egressPool").trim(),
    proxyUrl: field(body, "proxyUrl").trim(),
    hasClientCert: field(body, "hadClientCert") === "1",
    tlsCa: field(body, "tlsCa").trim(),
  };
}

/** The API fields a post stands for: none unless the form showed them. */
export function egressBodyOfForm(body: unknown): Record<string, unknown> {
  if (field(body, "egressFields") !== "1") return {};
  const v = egressValuesOfForm(body);
  const out: Record<string, unknown> = {
    egressPool: v.egressPool || null,
    proxyUrl: v.proxyUrl || null,
    tlsCa: v.tlsCa || null,
  };
  const cert = field(body, "tlsClientCert").trim();
  const key = field(body, "tlsClientKey").trim();
  if (cert || key) {
    // (one without the other is the API's to refuse, with its words)
    out.tlsClientCert = cert || null;
    out.tlsClientKey = key || null;
  } else if (field(body, "removeClientCert") === "on") {
    out.tlsClientCert = null;
    out.tlsClientKey = null;
  }
  return out;
}

/** Is any egress setting chosen (the section opens by itself)? */
export const egressCustomised = (v: EgressFormValues): boolean =>
  v.egressPool !== "" || v.proxyUrl !== "" || v.hasClientCert || v.tlsCa !== "";

/** The form's egress section. */
export function egressFieldset(v: EgressFormValues): Html {
  return html`<details class="settings"${egressCustomised(v) ? html` open` : ""}><summary>Egress: pool, proxy, client certificate (mTLS)</summary>
<input type="hidden" name="egressFields" value="1">
<input type="hidden" name="hadClientCert" value="${v.hasClientCert ? "1" : "0"}">
<div class="form-grid">
<p><label>Egress pool<br><input type="text" name="egressPool" maxlength="64" value="${v.egressPool}" placeholder="none: the application's, or the server's default"></label><br>
<span class="muted">A pool's public IPs are listed by <code>GET /api/v1/egress</code>.</span></p>
<p><label>Proxy URL<br><input type="text" name="proxyUrl" maxlength="2048" size="40" value="${v.proxyUrl}" placeholder="http://user:pass@proxy:3128 or socks5://…"></label><br>
<span class="muted">Its password is stored sealed and shown as <code>***</code>, which keeps it.</span></p>
</div>
<div class="form-grid">
<p><label>Client certificate (PEM)<br><textarea name="tlsClientCert" rows="4" cols="32" placeholder="${v.hasClientCert ? "set: leave empty to keep it" : "none"}"></textarea></label></p>
<p><label>Its private key (PEM, unencrypted)<br><textarea name="tlsClientKey" rows="4" cols="32" autocomplete="off" placeholder="${v.hasClientCert ? "set: leave empty to keep it" : "none"}"></textarea></label>${
    v.hasClientCert
      ? html`<br><label><input type="checkbox" name="removeClientCert"> remove the client certificate</label>`
      : ""
  }</p>
</div>
<p><label>CA bundle for the receiver's certificate (PEM)<br><textarea name="tlsCa" rows="3" cols="64" placeholder="none: the system's CAs">${v.tlsCa}</textarea></label></p>
</details>`;
}

/** How an endpoint's requests leave, as a row of a <dl> (detail pages); nothing when by default. */
export function egressFacts(e: Record<string, unknown>): Html | string {
  const v = egressValuesOfEndpoint(e);
  if (!egressCustomised(v)) return "";
  const parts = [
    v.proxyUrl && html`proxy <code>${v.proxyUrl}</code>`,
    !v.proxyUrl && v.egressPool && html`pool <code>${v.egressPool}</code>`,
    v.hasClientCert && "client certificate set",
    v.tlsCa && "own CA bundle",
  ].filter(Boolean);
  return html`<dt>Egress</dt><dd data-testid="egress">${parts.map((p, i) => html`${i > 0 ? "; " : ""}${p}`)}</dd>`;
}
