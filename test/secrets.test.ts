/**
 * Signing secrets (docs/delivery.md, Signing; docs/security.md): rotation with a grace period in
 * which old and new secrets both sign, at most four old secrets, expiry; operator-supplied
 * secrets validated and used as given; encryption at rest (AES-256-GCM) and the
 * `hookrelay secrets reencrypt` command run against a server (in this process with its own
 * environment: helpers/cli.ts runCliInProcess).
 *
 * Real PostgreSQL (one cloned database), real HTTP deliveries to a receiver on 127.0.0.1,
 * every signature checked with the `standardwebhooks` library.
 */
import { createHash, randomBytes } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { makeHttpSender } from "../src/delivery/http-sender.ts";
import { silentLogger } from "../src/logger.ts";
import { makeRedactor } from "../src/security/redact.ts";
import { makeSecretBox, type SecretBox } from "../src/security/secret-box.ts";
import { makeSsrfGuard } from "../src/security/ssrf-guard.ts";
import { makeWorker, type Worker } from "../src/worker/worker.ts";
import { listenOnLoopback, runCliInProcess } from "./helpers/cli.ts";
import { buildTestApi, type Harness, startHarness } from "./helpers/harness.ts";
import { type Received, type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";

let h: Harness;
let rx: Receiver;
let seq = 0;

beforeAll(async () => {
  h = await startHarness();
  rx = await startReceiver();
});
afterAll(async () => {
  await h?.close();
  await rx?.close();
});

const newSecret = (bytes = 32) => `whsec_${randomBytes(bytes).toString("base64")}`;

function verifies(secret: string, r: Received): boolean {
  try {
    new Webhook(secret).verify(r.body, {
      "webhook-id": String(r.headers["webhook-id"]),
      "webhook-timestamp": String(r.headers["webhook-timestamp"]),
      "webhook-signature": String(r.headers["webhook-signature"]),
    });
    return true;
  } catch {
    return false;
  }
}

const signaturesOf = (r: Received) => String(r.headers["webhook-signature"]).split(" ");

/** Calls the given API (default: the harness's) with the admin key. */
async function call(method: string, url: string, body?: unknown, app?: FastifyInstance) {
  const res = await (app ?? h.api).inject({
    method: method as "GET",
    url,
    headers: {
      authorization: `Bearer ${h.adminKey}`,
      ...(body !== undefined && { "content-type": "application/json" }),
    },
    payload:
      body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : null, text: res.body };
}

interface Ep {
  appId: string;
  id: string;
  path: string;
  base: string;
}

async function endpoint(secret?: string, app?: FastifyInstance): Promise<Ep> {
  const a = await call("POST", `${V1}/app`, { name: `secrets ${++seq}` }, app);
  const p = `/ep-${seq}-${randomBytes(3).toString("hex")}`;
  const ep = await call(
    "POST",
    `${V1}/app/${a.body.id}/endpoint`,
    { url: `${rx.url}${p}`, ...(secret && { secret }) },
    app,
  );
  expect(ep.status, ep.text).toBe(201);
  return {
    appId: a.body.id,
    id: ep.body.id,
    path: p,
    base: `${V1}/app/${a.body.id}/endpoint/${ep.body.id}`,
  };
}

/** Sends one message to the endpoint's app and returns the request the receiver got. */
async function deliver(ep: Ep, app?: FastifyInstance): Promise<Received> {
  const msg = await call(
    "POST",
    `${V1}/app/${ep.appId}/msg`,
    { eventType: "secret.test", payload: { n: ++seq, amount: "1.50" } },
    app,
  );
  expect(msg.status).toBe(202);
  let got: Received | undefined;
  await waitFor(
    () => {
      got = rx.on(ep.path).find((r) => r.headers["webhook-id"] === msg.body.id);
      return got !== undefined;
    },
    15_000,
    `delivery of ${msg.body.id}`,
  );
  return got!;
}

const rotate = (ep: Ep, body?: unknown, app?: FastifyInstance) =>
  call("POST", `${ep.base}/secret/rotate`, body, app);
const currentSecret = async (ep: Ep, app?: FastifyInstance) =>
  (await call("GET", `${ep.base}/secret`, undefined, app)).body.key as string;

async function secretRows(endpointId: string) {
  const { rows } = await h.db.pool.query(
    `select id, secret, expires_at, extract(epoch from expires_at - now())::float8 as left_s
     from endpoint_secrets where endpoint_id = $1 order by id`,
    [endpointId],
  );
  return rows as { id: number; secret: string; expires_at: Date | null; left_s: number | null }[];
}

// =======================================================================================

describe("rotation", () => {
  let worker: Worker;
  beforeAll(() => {
    worker = h.startWorker();
  });
  afterAll(async () => {
    await worker.stop();
  });

  test("during the grace period the header carries both signatures; old and new each verify alone", async () => {
    const s0 = newSecret();
    const ep = await endpoint(s0);
    const first = await deliver(ep);
    expect(signaturesOf(first)).toHaveLength(1);
    expect(verifies(s0, first)).toBe(true);

    const s1 = newSecret();
    expect((await rotate(ep, { key: s1, gracePeriodSeconds: 3600 })).status).toBe(204);
    expect(await currentSecret(ep)).toBe(s1);
    const rows = await secretRows(ep.id);
    expect(rows).toHaveLength(2);
    expect(rows[1]!.expires_at).toBeNull();
    expect(rows[0]!.left_s).toBeGreaterThan(3590);
    expect(rows[0]!.left_s).toBeLessThanOrEqual(3600);

    const during = await deliver(ep);
    const sigs = signaturesOf(during);
    expect(sigs).toHaveLength(2);
    expect(verifies(s0, during)).toBe(true);
    expect(verifies(s1, during)).toBe(true);
    expect(verifies(newSecret(), during)).toBe(false);
    // each signature alone: the newest first, and each matches exactly one secret
    const alone = (sig: string): Received => ({
      ...during,
      headers: { ...during.headers, "webhook-signature": sig },
    });
    expect([verifies(s1, alone(sigs[0]!)), verifies(s0, alone(sigs[0]!))]).toEqual([true, false]);
    expect([verifies(s1, alone(sigs[1]!)), verifies(s0, alone(sigs[1]!))]).toEqual([false, true]);
    // and a changed body fails with either
    expect(verifies(s0, { ...during, body: during.body.replace("1.50", "1.5") })).toBe(false);
  });

  test("after the grace period the old secret no longer verifies; the next rotation drops it", async () => {
    const s0 = newSecret();
    const ep = await endpoint(s0);
    const s1 = newSecret();
    expect((await rotate(ep, { key: s1, gracePeriodSeconds: 1 })).status).toBe(204);
    const during = await deliver(ep);
    expect([verifies(s0, during), verifies(s1, during)]).toEqual([true, true]);

    await waitFor(
      async () => (await secretRows(ep.id)).every((r) => r.left_s === null || r.left_s <= 0),
      5_000,
      "grace period over",
    );
    const after = await deliver(ep);
    expect(signaturesOf(after)).toHaveLength(1);
    expect(verifies(s1, after)).toBe(true);
    expect(verifies(s0, after)).toBe(false);

    expect((await rotate(ep, {})).status).toBe(204);
    const rows = await secretRows(ep.id);
    expect(rows.map((r) => r.secret)).not.toContain(s0);
    expect(rows).toHaveLength(2);
  });

  test("grace 0 stops the old secret at once; no body, {} and null mean the default 24 h", async () => {
    const s0 = newSecret();
    const ep = await endpoint(s0);
    expect((await rotate(ep, { gracePeriodSeconds: 0 })).status).toBe(204);
    const s1 = await currentSecret(ep);
    expect(s1).not.toBe(s0);
    const r = await deliver(ep);
    expect(signaturesOf(r)).toHaveLength(1);
    expect([verifies(s0, r), verifies(s1, r)]).toEqual([false, true]);

    for (const body of [undefined, {}, "null", { key: null, gracePeriodSeconds: null }]) {
      const res = await rotate(ep, body);
      expect(res.status, JSON.stringify(body)).toBe(204);
      const rows = await secretRows(ep.id);
      const newestOld = rows.filter((x) => x.expires_at !== null).at(-1)!;
      expect(newestOld.left_s).toBeGreaterThan(86_390);
      expect(newestOld.left_s).toBeLessThanOrEqual(86_400);
    }
    for (const bad of [
      { gracePeriodSeconds: -1 },
      { gracePeriodSeconds: 7 * 86_400 + 1 },
      { gracePeriodSeconds: 1.5 },
      { gracePeriodSeconds: "60" },
      { grace: 1 },
      "[]",
      '"x"',
    ]) {
      expect((await rotate(ep, bad)).status, JSON.stringify(bad)).toBe(422);
    }
  });

  test("at most four old secrets sign beside the current one; older ones are dropped", async () => {
    const secrets = [newSecret()];
    const ep = await endpoint(secrets[0]);
    for (let i = 1; i <= 7; i++) {
      secrets.push(newSecret());
      expect((await rotate(ep, { key: secrets[i], gracePeriodSeconds: 3600 })).status).toBe(204);
    }
    const rows = await secretRows(ep.id);
    expect(rows).toHaveLength(5);
    expect(rows.filter((r) => r.expires_at === null)).toHaveLength(1);
    const r = await deliver(ep);
    expect(signaturesOf(r)).toHaveLength(5);
    expect(secrets.map((s) => verifies(s, r))).toEqual([
      false,
      false,
      false,
      true,
      true,
      true,
      true,
      true,
    ]);
  });

  test("concurrent rotations: one current secret, at most four old, deliveries verify", async () => {
    const ep = await endpoint();
    const supplied = Array.from({ length: 10 }, () => newSecret());
    const results = await Promise.all(
      supplied.map((key) => rotate(ep, { key, gracePeriodSeconds: 3600 })),
    );
    expect(results.map((r) => r.status)).toEqual(supplied.map(() => 204));
    const rows = await secretRows(ep.id);
    expect(rows.filter((r) => r.expires_at === null)).toHaveLength(1);
    expect(rows.filter((r) => r.expires_at !== null).length).toBeLessThanOrEqual(4);
    const current = await currentSecret(ep);
    expect(supplied).toContain(current);
    expect(verifies(current, await deliver(ep))).toBe(true);
  });
});

describe("supplied secrets", () => {
  let worker: Worker;
  beforeAll(() => {
    worker = h.startWorker();
  });
  afterAll(async () => {
    await worker.stop();
  });

  test("whsec_ + base64 of 24 to 64 bytes is accepted and used exactly as given", async () => {
    for (const bytes of [24, 32, 48, 64]) {
      const s = newSecret(bytes);
      const ep = await endpoint(s);
      expect(await currentSecret(ep)).toBe(s);
      expect(verifies(s, await deliver(ep))).toBe(true);
      const s2 = newSecret(bytes);
      expect((await rotate(ep, { key: s2, gracePeriodSeconds: 0 })).status).toBe(204);
      expect(await currentSecret(ep)).toBe(s2);
      const r = await deliver(ep);
      expect([verifies(s2, r), verifies(s, r)]).toEqual([true, false]);
    }
  });

  test("generated secrets are whsec_ + 32 random bytes, different every time", async () => {
    const ep = await endpoint();
    const seen = new Set<string>([await currentSecret(ep)]);
    for (let i = 0; i < 5; i++) {
      await rotate(ep, { gracePeriodSeconds: 0 });
      seen.add(await currentSecret(ep));
    }
    expect(seen.size).toBe(6);
    for (const s of seen) {
      expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(s.slice(6), "base64")).toHaveLength(32);
    }
  });

  test("refused: 23 and 65 bytes, broken base64, other prefixes; a refusal changes nothing", async () => {
    const b64 = (n: number) => randomBytes(n).toString("base64");
    let urlSafe = "";
    while (!/[-_]/.test(urlSafe)) urlSafe = randomBytes(32).toString("base64url");
    const refused: [string, unknown][] = [
      ["23 bytes", `whsec_${b64(23)}`],
      ["65 bytes", `whsec_${b64(65)}`],
      ["empty after prefix", "whsec_"],
      ["base64url alphabet", `whsec_${urlSafe}=`],
      ["padding missing", `whsec_${b64(32).replace(/=+$/, "")}`],
      ["padding in the middle", `whsec_${b64(16)}${b64(16)}`],
      ["trailing newline", `whsec_${b64(32)}\n`],
      ["leading space", ` whsec_${b64(32)}`],
      ["inner space", `whsec_${b64(16)} ${b64(15)}`],
      ["star", `whsec_${"A".repeat(42)}*=`],
      ["doubled prefix", `whsec_whsec_${b64(32)}`],
      ["upper-case prefix", `WHSEC_${b64(32)}`],
      ["other vendor", `sk_live_${b64(32)}`],
      ["unicode", `whsec_${"Ä".repeat(44)}`],
    ];
    const ep = await endpoint();
    const before = { current: await currentSecret(ep), rows: await secretRows(ep.id) };
    for (const [what, key] of refused) {
      // validation_error is 422 wherever it is answered (docs/errors.md)
      const res = await rotate(ep, { key, gracePeriodSeconds: 0 });
      expect(res.status, what).toBe(422);
      expect(res.body.code, what).toBe("validation_error");
      const created = await call("POST", `${V1}/app/${ep.appId}/endpoint`, {
        url: `${rx.url}/never`,
        secret: key,
      });
      expect(created.status, `create with ${what}`).toBe(422);
      expect(created.body.code, `create with ${what}`).toBe("validation_error");
    }
    // longer than any valid secret, or not a string: schema errors
    for (const key of [`whsec_${b64(96)}`, 12345, ["whsec_x"], { k: 1 }]) {
      expect((await rotate(ep, { key })).status, JSON.stringify(key).slice(0, 40)).toBe(422);
    }
    expect(await currentSecret(ep)).toBe(before.current);
    expect(await secretRows(ep.id)).toEqual(before.rows);
    const { rows } = await h.db.pool.query(
      "select count(*)::int as n from endpoints where url = $1",
      [`${rx.url}/never`],
    );
    expect(rows[0].n).toBe(0);
  });

  test("the secret changes through rotation only: PATCH and PUT with a secret are refused", async () => {
    const s = newSecret();
    const ep = await endpoint(s);
    expect((await call("PATCH", ep.base, { secret: newSecret() })).status).toBe(400);
    expect(
      (await call("PUT", ep.base, { url: `${rx.url}${ep.path}`, secret: newSecret() })).status,
    ).toBe(400);
    expect(await currentSecret(ep)).toBe(s);
  });

  test("a bare base64 secret (Svix style, no prefix) is accepted and stored with the prefix", async () => {
    const bare = randomBytes(32).toString("base64");
    const ep = await endpoint(bare);
    expect(await currentSecret(ep)).toBe(`whsec_${bare}`);
    expect(verifies(`whsec_${bare}`, await deliver(ep))).toBe(true);
  });
});

// =======================================================================================

describe("encryption at rest", () => {
  const key1 = randomBytes(32).toString("base64");
  const key2 = randomBytes(32).toString("hex");
  const keyId = (k: string) =>
    createHash("sha256")
      .update(/^[0-9a-f]{64}$/i.test(k) ? Buffer.from(k, "hex") : Buffer.from(k, "base64"))
      .digest("hex")
      .slice(0, 8);
  const box1 = makeSecretBox(key1);
  let api1: FastifyInstance;
  let sealedEp: Ep;
  let plainEp: Ep;
  const s = newSecret();
  const s2 = newSecret();
  let plainSecret: string;
  const sender = makeHttpSender({ ssrfGuard: makeSsrfGuard({ allowlist: ["127.0.0.0/8"] }) });

  function workerWith(box: SecretBox): Worker {
    const w = makeWorker({
      pool: h.db.pool,
      sender,
      config: { delivery: h.config.delivery, health: h.config.health, worker: h.config.worker },
      logger: silentLogger,
      secretBox: box,
      redactor: makeRedactor(),
    });
    w.start();
    return w;
  }

  /**
   * `hookrelay secrets reencrypt --json` against a server holding these keys. The CLI's
   * own environment names a different key: the server's keys are the ones that count.
   */
  async function reencrypt(keys: { current: string; previous?: string }) {
    const box = makeSecretBox(keys.current, keys.previous ? [keys.previous] : []);
    const server = await buildTestApi({
      pool: h.db.pool,
      config: h.config,
      logger: silentLogger,
      secretBox: box,
    });
    try {
      const url = await listenOnLoopback(server);
      return await runCliInProcess(["secrets", "reencrypt", "--json"], {
        env: {
          HOOKRELAY_URL: url,
          HOOKRELAY_KEY: h.adminKey,
          HOOKRELAY_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
        },
      });
    } finally {
      await server.close();
    }
  }

  const allRows = async () =>
    (await h.db.pool.query("select id, endpoint_id, secret from endpoint_secrets order by id"))
      .rows as {
      id: number;
      endpoint_id: string;
      secret: string;
    }[];

  beforeAll(async () => {
    api1 = await buildTestApi({
      pool: h.db.pool,
      config: h.config,
      logger: silentLogger,
      secretBox: box1,
    });
    // one endpoint stored plain (no key configured), before the key is introduced
    plainEp = await endpoint();
    plainSecret = await currentSecret(plainEp);
  });
  afterAll(async () => {
    await api1?.close();
    await sender.close();
  });

  test("with a key, secrets are stored sealed; the API shows them plain; deliveries verify", async () => {
    sealedEp = await endpoint(s, api1);
    const [row] = await secretRows(sealedEp.id);
    expect(row!.secret.startsWith(`enc:v1:${keyId(key1)}:`)).toBe(true);
    expect(row!.secret).not.toContain(s.slice(6));
    expect(row!.secret).not.toContain(Buffer.from(s.slice(6), "base64").toString("hex"));
    // a random IV: the same secret sealed twice looks different
    const twin = await endpoint(s, api1);
    expect((await secretRows(twin.id))[0]!.secret).not.toBe(row!.secret);
    expect(await currentSecret(sealedEp, api1)).toBe(s);

    expect((await rotate(sealedEp, { key: s2, gracePeriodSeconds: 3600 }, api1)).status).toBe(204);
    const rows = await secretRows(sealedEp.id);
    expect(rows.every((r) => r.secret.startsWith(`enc:v1:${keyId(key1)}:`))).toBe(true);
    expect(await currentSecret(sealedEp, api1)).toBe(s2);

    const w = workerWith(box1);
    try {
      const r = await deliver(sealedEp, api1);
      expect([verifies(s, r), verifies(s2, r)]).toEqual([true, true]);
    } finally {
      await w.stop();
    }
  });

  test("a worker without the key records a failed 'signing' attempt and sends nothing; the row does not circle", async () => {
    const ep = await endpoint(newSecret(), api1);
    const msg = await call(
      "POST",
      `${V1}/app/${ep.appId}/msg`,
      { eventType: "secret.test", payload: { n: ++seq } },
      api1,
    );
    expect(msg.status).toBe(202);
    const w = workerWith(makeSecretBox(undefined));
    try {
      await waitFor(
        async () =>
          (await h.db.pool.query("select 1 from attempts where message_id = $1", [msg.body.id]))
            .rows.length > 0,
        15_000,
        "the attempt row",
      );
    } finally {
      await w.stop();
    }
    // (the test config's retry delays are short: a retry may have run before the stop)
    const { rows } = await h.db.pool.query(
      `select d.status, d.attempt_count, a.error_kind, a.error, a.status_code
       from deliveries d join attempts a on a.delivery_id = d.id where d.message_id = $1`,
      [msg.body.id],
    );
    expect(rows.length).toBeGreaterThanOrEqual(1);
    for (const row of rows) {
      expect(["failed", "dead_letter"]).toContain(row.status);
      expect(row).toMatchObject({
        attempt_count: rows.length,
        error_kind: "signing",
        status_code: null,
      });
      expect(row.error).toContain("signing secret could not be opened");
    }
    expect(rx.on(ep.path)).toHaveLength(0);
  });

  test("a key must be 32 bytes", () => {
    for (const bad of [
      "short",
      randomBytes(16).toString("base64"),
      randomBytes(33).toString("hex"),
      "z".repeat(64),
    ]) {
      expect(() => makeSecretBox(bad), bad).toThrow(/32 bytes/);
      expect(() => makeSecretBox(key1, [bad]), bad).toThrow(/32 bytes/);
    }
  });

  test("`hookrelay secrets reencrypt` re-seals every row under the new key, plain rows included", async () => {
    const before = await allRows();
    expect(before.some((r) => !r.secret.startsWith("enc:"))).toBe(true);
    expect(before.some((r) => r.secret.startsWith(`enc:v1:${keyId(key1)}:`))).toBe(true);

    const res = await reencrypt({ current: key2, previous: key1 });
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ reencrypted: before.length, encrypted: true });
    const after = await allRows();
    expect(after.map((r) => r.id)).toEqual(before.map((r) => r.id));
    for (const r of after)
      expect(r.secret.startsWith(`enc:v1:${keyId(key2)}:`), String(r.id)).toBe(true);

    // the new key alone opens everything, for the API and for the worker
    const box2 = makeSecretBox(key2);
    const api2 = await buildTestApi({
      pool: h.db.pool,
      config: h.config,
      logger: silentLogger,
      secretBox: box2,
    });
    const w = workerWith(box2);
    try {
      expect(await currentSecret(sealedEp, api2)).toBe(s2);
      expect(await currentSecret(plainEp, api2)).toBe(plainSecret);
      const r = await deliver(sealedEp, api2);
      expect([verifies(s, r), verifies(s2, r)]).toEqual([true, true]);
      expect(verifies(plainSecret, await deliver(plainEp, api2))).toBe(true);
    } finally {
      await w.stop();
      await api2.close();
    }

    // a second run has nothing to do
    const again = await reencrypt({ current: key2, previous: key1 });
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ reencrypted: 0, encrypted: true });
  });

  test("without the key that sealed the rows, reencrypt fails and changes nothing", async () => {
    const before = await allRows();
    const res = await reencrypt({ current: randomBytes(32).toString("base64") });
    expect(res.code).toBe(1);
    // --json: the failure is one JSON line on stdout with the stable code (docs/cli.md)
    expect(res.stderr).toBe("");
    const { error } = JSON.parse(res.stdout);
    expect(error.code).toBe("encryption_key_missing");
    expect(error.message).toMatch(
      /^a secret is sealed under key [0-9a-f]{8}, which is neither HOOKRELAY_ENCRYPTION_KEY nor in HOOKRELAY_ENCRYPTION_KEY_PREVIOUS$/,
    );
    // the error names a key id, never key material or a secret
    expect(res.stdout).not.toContain(key2);
    expect(res.stdout).not.toContain(s.slice(6));
    expect(await allRows()).toEqual(before);
  });
});
