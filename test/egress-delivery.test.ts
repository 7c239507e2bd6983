/**
 * Egress end to end (docs/egress.md): endpoints and applications saved through the API,
 * delivered by a worker through Debian's squid (started by the test on 127.0.0.1; its
 * access log shows the tunnels), to an http receiver and to an https receiver that requires
 * a client certificate. What the API refuses when saved, what it answers (secrets masked,
 * sealed at rest), GET /api/v1/egress, and a proxy that is down: error kind `proxy`, which
 * the circuit breaker does not count.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readFile, rm } from "node:fs/promises";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import type { TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { reencryptSecrets } from "../src/security/reencrypt.ts";
import { makeSecretBox } from "../src/security/secret-box.ts";
import { dashboardClient } from "./helpers/dashboard-client.ts";
import {
  deliveryCalls,
  type ScriptedReceiver,
  startScriptedReceiver,
} from "./helpers/deliveries.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { openPortal } from "./helpers/portal-client.ts";
import { type Squid, squidInstalled, startSquid } from "./helpers/squid.ts";
import { makeCertificates } from "./helpers/tls-certificates.ts";

const KEY = randomBytes(32).toString("base64");
const AUTH = { user: "relay", password: "pr0xy-secret" };

let h: Harness;
let squid: Squid | undefined;
let rx: ScriptedReceiver;
let mtls: https.Server;
let mtlsPort: number;
let dir: string;
let pem: Record<"ca" | "cert" | "key" | "expiredCert" | "expiredKey" | "strangerKey", string>;
const clientNames: (string | string[] | undefined)[] = [];
const calls = deliveryCalls(() => h);

const squidUrl = (password = AUTH.password) =>
  `http://${AUTH.user}:${password}@127.0.0.1:${squid!.port}`;

beforeAll(async () => {
  dir = path.join(tmpdir(), `hookrelay-egress-api-${process.pid}-${Date.now()}`);
  const files = await makeCertificates(dir);
  const read = (f: string) => readFile(f, "utf8");
  pem = {
    ca: await read(files.ca),
    cert: await read(files.clientCert),
    key: await read(files.clientKey),
    expiredCert: await read(files.expiredCert),
    expiredKey: await read(files.expiredKey),
    strangerKey: await read(files.strangerKey),
  };
  if (squidInstalled) squid = await startSquid(AUTH);
  rx = await startScriptedReceiver();
  mtls = https.createServer(
    {
      cert: await readFile(files.serverCert),
      key: await readFile(files.serverKey),
      ca: await readFile(files.ca),
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      clientNames.push((req.socket as TLSSocket).getPeerCertificate().subject?.CN);
      req.resume().on("end", () => res.end("ok"));
    },
  );
  await new Promise<void>((r) => mtls.listen(0, "127.0.0.1", r));
  mtlsPort = (mtls.address() as AddressInfo).port;
  h = await startHarness({
    encryptionKey: KEY,
    // the https receiver's certificate names localhost only
    ssrfAllowlist: ["127.0.0.0/8", "localhost"],
    health: { ...(await import("./helpers/harness.ts")).testConfig().health, failureThreshold: 2 },
    egress: {
      proxy: null,
      pools: {
        fixed: {
          proxy: squid ? squidUrl() : "http://127.0.0.1:9",
          localAddress: null,
          publicIps: ["203.0.113.10", "203.0.113.11"],
          description: "through the NAT gateway",
        },
        local: { proxy: null, localAddress: "127.0.0.1", publicIps: [], description: "" },
      },
    },
  });
  h.startWorker();
}, 60_000);

afterAll(async () => {
  await h?.close();
  await squid?.stop();
  await rx?.close();
  mtls?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const endpointPath = (appId: string) => `/api/v1/app/${appId}/endpoint`;

describe("GET /api/v1/egress", () => {
  test("lists each pool's declared public IPs, and nothing of how it leaves", async () => {
    const res = await h.call("GET", "/api/v1/egress");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [
        {
          name: "fixed",
          description: "through the NAT gateway",
          publicIps: ["203.0.113.10", "203.0.113.11"],
        },
        { name: "local", description: "", publicIps: [] },
      ],
      defaultRoute: "direct",
    });
    expect(JSON.stringify(res.body)).not.toContain("127.0.0.1");
  });
});

describe("the portal's Egress IPs page", () => {
  test("shows each pool's public IPs to the app's tenant", async () => {
    const appId = await calls.newApp();
    const res = await h.call("POST", `/api/v1/auth/app-portal-access/${appId}`, {});
    expect(res.status).toBe(200);
    const portal = await openPortal(h.api, res.body.token);
    const page = await portal.get("/portal/egress");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("<code>203.0.113.10</code>");
    expect(page.body).toContain("through the NAT gateway");
    expect(page.body).not.toContain("127.0.0.1");
  });
});

describe("the dashboard's endpoint form", () => {
  test("sets a pool, a proxy and a client certificate; shows them masked; a refusal is the form again", async () => {
    const appId = await calls.newApp();
    const endpointId = await calls.newEndpoint(appId, `${rx.url}/dash`);
    const admin = dashboardClient(h.api);
    await admin.signIn(h.adminKey);
    const form = await admin.get(`/dashboard/endpoints/${endpointId}/edit`);
    expect(form.body).toContain('name="egressFields"');
    const fields = {
      url: `${rx.url}/dash`,
      egressFields: "1",
      egressPool: "fixed",
      proxyUrl: "http://relay:f0rm-pass@127.0.0.1:3128",
      tlsClientCert: pem.cert,
      tlsClientKey: pem.key,
      tlsCa: "",
    };
    const saved = await admin.post(`/dashboard/endpoints/${endpointId}/edit`, fields);
    expect(saved.statusCode, saved.body).toBe(303);
    const url = `${endpointPath(appId)}/${endpointId}`;
    expect((await h.call("GET", url)).body).toMatchObject({
      egressPool: "fixed",
      proxyUrl: "http://relay:***@127.0.0.1:3128",
      tlsClientCert: "***",
    });
    const page = await admin.get(`/dashboard/endpoints/${endpointId}`);
    expect(page.body).toMatch(
      /data-testid="egress">proxy <code>http:\/\/relay:\*\*\*@127.0.0.1:3128<\/code>; client certificate set</,
    );
    const again = await admin.get(`/dashboard/endpoints/${endpointId}/edit`);
    expect(again.body).not.toContain("f0rm-pass");
    expect(again.body).not.toContain("PRIVATE KEY");
    // the masked proxy URL posted back as shown keeps the password; empty certificate fields keep it
    const kept = await admin.post(`/dashboard/endpoints/${endpointId}/edit`, {
      ...fields,
      proxyUrl: "http://relay:***@127.0.0.1:3128",
      tlsClientCert: "",
      tlsClientKey: "",
      hadClientCert: "1",
    });
    expect(kept.statusCode, kept.body).toBe(303);
    const { rows } = await h.db.pool.query(
      "select proxy_secret is not null as p, tls_client_cert is not null as c from endpoints where id = $1",
      [endpointId],
    );
    expect(rows[0]).toEqual({ p: true, c: true });
    const refused = await admin.post(`/dashboard/endpoints/${endpointId}/edit`, {
      ...fields,
      egressPool: "nope",
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.body).toContain("is not configured on this server");
  });
});

describe("refused when saved", () => {
  test("bad proxy URLs, unknown pools and bad certificates are 422s with stable codes", async () => {
    const appId = await calls.newApp();
    const url = `${rx.url}/x`;
    const cases: [Record<string, unknown>, string][] = [
      [{ proxyUrl: "ftp://proxy.example:21" }, "invalid_proxy_url"],
      [{ proxyUrl: "http://proxy.example:3128/path" }, "invalid_proxy_url"],
      [{ proxyUrl: "http://10.0.0.1:3128" }, "url_not_allowed"],
      [{ egressPool: "nope" }, "unknown_egress_pool"],
      [{ tlsClientCert: "not a certificate", tlsClientKey: "x" }, "invalid_certificate"],
      [{ tlsClientCert: pem.cert }, "invalid_certificate"],
      [{ tlsClientCert: pem.cert, tlsClientKey: pem.strangerKey }, "certificate_key_mismatch"],
      [{ tlsClientCert: pem.expiredCert, tlsClientKey: pem.expiredKey }, "certificate_expired"],
      [
        { tlsCa: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----" },
        "invalid_certificate",
      ],
    ];
    for (const [fields, code] of cases) {
      const res = await h.call("POST", endpointPath(appId), { url, ...fields });
      expect([res.status, res.body.code], JSON.stringify(fields)).toEqual([422, code]);
    }
    const app = await h.call("POST", "/api/v1/app", { name: "a", egressPool: "nope" });
    expect([app.status, app.body.code]).toEqual([422, "unknown_egress_pool"]);
  });
});

describe.skipIf(!squidInstalled)("through squid", () => {
  test("an application's pool carries its endpoints' deliveries; squid's log shows the tunnel", async () => {
    const app = await h.call("POST", "/api/v1/app", {
      name: `a-${randomUUID()}`,
      egressPool: "fixed",
    });
    expect([app.status, app.body.egressPool]).toEqual([201, "fixed"]);
    const route = rx.route(() => ({ status: 200, headers: { connection: "close" } }));
    const endpointId = await calls.newEndpoint(app.body.id, `${rx.url}${route}`);
    const msgId = await calls.send(app.body.id);
    await calls.waitForStatus(msgId, endpointId, "delivered");
    const port = new URL(rx.url).port;
    const tunnel = (l: string) => l.includes(`CONNECT 127.0.0.1:${port}`);
    expect((await squid!.logUntil((ls) => ls.some(tunnel))).some(tunnel)).toBe(true);
  });

  test("an endpoint's own proxy: its password sealed at rest and answered as ***", async () => {
    const appId = await calls.newApp();
    const route = rx.route(() => ({ status: 200, headers: { connection: "close" } }));
    const created = await h.call("POST", endpointPath(appId), {
      url: `${rx.url}${route}`,
      proxyUrl: squidUrl(),
    });
    expect(created.status).toBe(201);
    expect(created.body.proxyUrl).toBe(`http://${AUTH.user}:***@127.0.0.1:${squid!.port}`);
    const { rows } = await h.db.pool.query(
      "select proxy_url, proxy_secret from endpoints where id = $1",
      [created.body.id],
    );
    expect(JSON.stringify(rows[0])).not.toContain(AUTH.password);
    const msgId = await calls.send(appId);
    await calls.waitForStatus(msgId, created.body.id, "delivered");
    expect(rx.on(route)).toHaveLength(1);
    // sending the mask back keeps the password
    const patched = await h.call("PATCH", `${endpointPath(appId)}/${created.body.id}`, {
      proxyUrl: created.body.proxyUrl,
    });
    expect(patched.status).toBe(200);
    const again = await calls.send(appId);
    await calls.waitForStatus(again, created.body.id, "delivered");
  });
});

describe("mTLS", () => {
  test("a client certificate and CA bundle: delivered, the receiver saw our certificate; answers mask them", async () => {
    const appId = await calls.newApp();
    const created = await h.call("POST", endpointPath(appId), {
      url: `https://localhost:${mtlsPort}/hook`,
      tlsClientCert: pem.cert,
      tlsClientKey: pem.key,
      tlsCa: pem.ca,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({
      tlsClientCert: "***",
      tlsClientKey: "***",
      tlsCa: pem.ca,
    });
    const { rows } = await h.db.pool.query(
      "select tls_client_cert, tls_client_key from endpoints where id = $1",
      [created.body.id],
    );
    expect(rows[0].tls_client_key).not.toContain("PRIVATE KEY");
    const msgId = await calls.send(appId);
    await calls.waitForStatus(msgId, created.body.id, "delivered");
    expect(clientNames.at(-1)).toBe("certuser");
  });

  test("without the client certificate the attempt fails with error kind tls", async () => {
    const appId = await calls.newApp();
    const endpointId = await calls.newEndpoint(appId, `https://localhost:${mtlsPort}/hook`, {
      tlsCa: pem.ca,
      maxAttempts: 1,
    });
    const msgId = await calls.send(appId);
    const row = await calls.waitForStatus(msgId, endpointId, "dead_letter");
    expect(row.last_error_kind).toBe("tls");
  });
});

describe("a proxy that is down", () => {
  test("error kind proxy, no latency sample, and the circuit stays closed", async () => {
    const appId = await calls.newApp();
    // port 9 (discard) on loopback: nothing listens there
    const endpointId = await calls.newEndpoint(appId, `${rx.url}${rx.route()}`, {
      proxyUrl: "http://127.0.0.1:9",
      maxAttempts: 1,
    });
    const sent = [await calls.send(appId), await calls.send(appId), await calls.send(appId)];
    for (const msgId of sent) {
      const row = await calls.waitForStatus(msgId, endpointId, "dead_letter");
      expect(row.last_error_kind).toBe("proxy");
    }
    const { rows } = await h.db.pool.query(
      `select h.circuit_state,
              (select count(*)::int from latency_samples s where s.endpoint_id = h.endpoint_id) as samples
       from endpoint_health h where h.endpoint_id = $1`,
      [endpointId],
    );
    expect(rows[0] ?? { circuit_state: "closed", samples: 0 }).toEqual({
      circuit_state: "closed",
      samples: 0,
    });
  });
});

describe("key rotation", () => {
  test("re-encryption re-seals the proxy password and the client certificate and key", async () => {
    const appId = await calls.newApp();
    const created = await h.call("POST", endpointPath(appId), {
      url: `https://localhost:${mtlsPort}/rotated`,
      proxyUrl: "http://relay:rotate-me@127.0.0.1:3128",
      tlsClientCert: pem.cert,
      tlsClientKey: pem.key,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const read = async () =>
      (
        await h.db.pool.query(
          "select proxy_secret, tls_client_cert, tls_client_key from endpoints where id = $1",
          [created.body.id],
        )
      ).rows[0];
    const before = await read();
    const next = randomBytes(32).toString("base64");
    const box = makeSecretBox(next, [KEY]);
    await reencryptSecrets(h.db.pool, box);
    const after = await read();
    for (const column of ["proxy_secret", "tls_client_cert", "tls_client_key"]) {
      expect(after[column]).not.toBe(before[column]);
      expect(box.needsReseal(after[column])).toBe(false);
    }
    expect(box.open(after.proxy_secret)).toBe("rotate-me");
    expect(box.open(after.tls_client_key)).toBe(pem.key);
  });
});
