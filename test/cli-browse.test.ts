/**
 * Browsing with the CLI against a real server, worker and receiver: `msg list` with its
 * filters and iterator (and the API's delivery_status and endpoint_id filters behind them),
 * `msg get`, `attempts` (and the attempts API's before/after), the app shown by its name,
 * `--json` failures, messages that name the real cause, and the policy flags' bounds taken
 * from the same table as the API's schema.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { ENDPOINT_POLICY, type PolicyField } from "../src/domain/endpoint-policy.ts";
import { writeLocalCliAccess } from "../src/security/local-cli-access.ts";
import type { Worker } from "../src/worker/worker.ts";
import { cliAgainst, listenOnLoopback, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";
import { type Receiver, startReceiver, waitFor } from "./helpers/receiver.ts";

const V1 = "/api/v1";

let h: Harness;
let worker: Worker;
let receiver: Receiver;
let dir: string;
let server: { url: string; key: string };
const X = { app: "", ok: "", bad: "", paid: [] as string[], refunded: [] as string[] };

const cli = cliAgainst(() => ({ ...server, dir }));

async function send(eventType: string, n: number): Promise<string> {
  const res = await h.call("POST", `${V1}/app/${X.app}/msg`, {
    eventType,
    payload: { n, note: `${eventType} ${n}` },
    eventId: `${eventType}-${n}`,
  });
  if (res.status !== 202) throw new Error(JSON.stringify(res.body));
  return res.body.id;
}

beforeAll(async () => {
  h = await startHarness();
  dir = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-browse-"));
  const key = await createApiKey(h.db.pool, { role: "admin" }, "cli browse test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
  receiver = await startReceiver((r) => ({ status: r.path === "/bad" ? 500 : 200 }));
  X.app = (await h.call("POST", `${V1}/app`, { name: "Acme Browse", uid: "browse-acme" })).body.id;
  const ep = async (body: Record<string, unknown>) =>
    (await h.call("POST", `${V1}/app/${X.app}/endpoint`, body)).body.id as string;
  X.ok = await ep({ url: `${receiver.url}/ok`, uid: "ok" });
  // one attempt and it is a dead letter
  X.bad = await ep({
    url: `${receiver.url}/bad`,
    uid: "bad",
    maxAttempts: 1,
    eventTypes: ["order.refunded"],
  });
  for (let n = 1; n <= 3; n++) X.paid.push(await send("order.paid", n));
  for (let n = 1; n <= 2; n++) X.refunded.push(await send("order.refunded", n));
  worker = h.startWorker();
  await waitFor(
    async () => {
      const { rows } = await h.db.pool.query(
        `select count(*)::int as n from deliveries
         where app_id = $1 and status in ('delivered', 'dead_letter')`,
        [X.app],
      );
      return rows[0].n === 7;
    },
    30_000,
    "every delivery final",
  );
});
afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await h?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const idsOf = (stdout: string) =>
  JSON.parse(stdout)
    .data.map((m: { id: string }) => m.id)
    .sort();

describe.concurrent("msg list, msg get, attempts", { timeout: 60_000 }, () => {
  test("the API's message list filters by delivery state and endpoint; an unknown state is 422", async () => {
    const dead = await h.call("GET", `${V1}/app/${X.app}/msg?delivery_status=dead_letter`);
    expect(dead.status).toBe(200);
    expect(dead.body.data.map((m: { id: string }) => m.id).sort()).toEqual([...X.refunded].sort());
    const both = await h.call(
      "GET",
      `${V1}/app/${X.app}/msg?delivery_status=dead_letter&delivery_status=delivered&endpoint_id=ok`,
    );
    expect(both.body.data).toHaveLength(5);
    // dead letters alone take their own path (the partial indexes): by app and by endpoint
    const deadOnOk = await h.call(
      "GET",
      `${V1}/app/${X.app}/msg?delivery_status=dead_letter&endpoint_id=ok`,
    );
    expect(deadOnOk.body.data).toEqual([]);
    const deadOnBad = await h.call(
      "GET",
      `${V1}/app/${X.app}/msg?delivery_status=dead_letter&endpoint_id=bad&limit=1`,
    );
    expect(deadOnBad.body.data.map((m: { id: string }) => m.id)).toEqual([X.refunded[1]]);
    expect(deadOnBad.body.done).toBe(false);
    const bad = await h.call("GET", `${V1}/app/${X.app}/msg?endpoint_id=bad`);
    expect(bad.body.data.map((m: { id: string }) => m.id).sort()).toEqual([...X.refunded].sort());
    const unknown = await h.call("GET", `${V1}/app/${X.app}/msg?delivery_status=lost`);
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe("validation_error");
    const noEndpoint = await h.call("GET", `${V1}/app/${X.app}/msg?endpoint_id=nope`);
    expect(noEndpoint.status).toBe(404);
  });

  test("the API's attempt lists take before and after", async () => {
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const all = await h.call("GET", `${V1}/app/${X.app}/attempt/endpoint/ok?before=${future}`);
    expect(all.body.data).toHaveLength(5);
    const none = await h.call("GET", `${V1}/app/${X.app}/attempt/endpoint/ok?after=${future}`);
    expect(none.body.data).toHaveLength(0);
    const bad = await h.call("GET", `${V1}/app/${X.app}/attempt/endpoint/ok?after=yesterday`);
    expect(bad.status).toBe(422);
  });

  test("msg list: filters, and a page at a time through the iterator", async () => {
    const dead = await cli(["msg", "list", "browse-acme", "--status", "dead_letter", "--json"]);
    expect(dead.code, show(dead)).toBe(0);
    expect(idsOf(dead.stdout)).toEqual([...X.refunded].sort());
    const paid = await cli(["msg", "list", "browse-acme", "--event-type", "order.paid", "--json"]);
    expect(idsOf(paid.stdout)).toEqual([...X.paid].sort());
    const toBad = await cli(["msg", "list", "browse-acme", "--endpoint", "bad", "--json"]);
    expect(idsOf(toBad.stdout)).toEqual([...X.refunded].sort());
    const later = await cli(["msg", "list", "browse-acme", "--since", "2999-01-01T00:00:00Z"]);
    expect(later.stdout).toBe("no messages\n");

    const first = await cli(["msg", "list", "browse-acme", "--limit", "3"]);
    expect(first.code, show(first)).toBe(0);
    const lines = first.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(
      /^message\s+created\s+event type\s+event id\s+channels\s+ordering key$/,
    );
    // newest first: the refunds, then the last paid one
    expect(lines[2]).toMatch(
      new RegExp(`^${X.refunded[1]}\\s+\\S+Z\\s+order\\.refunded\\s+order\\.refunded-2\\s+-\\s+-$`),
    );
    const more = /^more: --iterator (\S+)$/.exec(lines.at(-1)!);
    expect(more, show(first)).not.toBeNull();
    const rest = await cli(["msg", "list", "browse-acme", "--limit", "3", "--iterator", more![1]!]);
    expect(rest.stdout).toContain(X.paid[1]);
    expect(rest.stdout).toContain(X.paid[0]);
    expect(rest.stdout).not.toMatch(/more: --iterator/);
  });

  test("msg list refuses an unknown state and a limit past the API's before asking", async () => {
    const r = await cli(["msg", "list", "browse-acme", "--status", "lost"]);
    expect(r.code, show(r)).toBe(2);
    expect(r.stderr).toMatch(/expected delivery states among pending, in_flight, delivered/);
    // every --limit takes the API's page bounds, and dlq list --status-code its filter's
    for (const args of [
      ["msg", "list", "browse-acme"],
      ["attempts", "browse-acme", "--endpoint", "ok"],
      ["dlq", "list"],
      ["tasks", "list"],
    ]) {
      const l = await cli([...args, "--limit", "251"]);
      expect(l.code, show(l)).toBe(2);
      expect(l.stderr).toMatch(/expected 1 to 250 \(the server's bounds\), got 251/);
    }
    const code = await cli(["dlq", "list", "--status-code", "99"]);
    expect(code.code).toBe(2);
    expect(code.stderr).toMatch(/expected 100 to 599 \(the server's bounds\), got 99/);
  });

  test("msg get: the payload, each endpoint's delivery, the attempts", async () => {
    const r = await cli(["msg", "get", "browse-acme", "order.refunded-1"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^message\\s+${X.refunded[0]}$`, "m"));
    expect(r.stdout).toMatch(/^app\s+Acme Browse \(browse-acme\)$/m);
    expect(r.stdout).toContain('"note": "order.refunded 1"');
    expect(r.stdout).toMatch(new RegExp(`^${X.ok}\\s+ok\\s+delivered\\s+1\\s+200\\s`, "m"));
    expect(r.stdout).toMatch(new RegExp(`^${X.bad}\\s+bad\\s+dead_letter\\s+1\\s+500\\s`, "m"));
    expect(r.stdout).toMatch(/^attempts: 2 \(1 succeeded, 1 failed\)$/m);
    const j = await cli(["msg", "get", "browse-acme", X.refunded[0]!, "--json"]);
    const body = JSON.parse(j.stdout);
    expect(body.message.payload).toEqual({ n: 1, note: "order.refunded 1" });
    expect(body.deliveries.map((d: { deliveryStatus: string }) => d.deliveryStatus).sort()).toEqual(
      ["dead_letter", "delivered"],
    );
    expect(body.attempts).toMatchObject({ total: 2, succeeded: 1, failed: 1, complete: true });
  });

  test("attempts: of a message, to an endpoint, by result", async () => {
    const toBad = await cli(["attempts", "browse-acme", "--endpoint", "bad", "--json"]);
    expect(toBad.code, show(toBad)).toBe(0);
    const page = JSON.parse(toBad.stdout);
    expect(page.data).toHaveLength(2);
    expect(
      page.data.every((a: { responseStatusCode: number }) => a.responseStatusCode === 500),
    ).toBe(true);
    const ofMsg = await cli(["attempts", "browse-acme", "--msg", X.refunded[1]!]);
    expect(ofMsg.stdout.trimEnd().split("\n")).toHaveLength(4);
    expect(ofMsg.stdout).toMatch(new RegExp(`\\s${X.bad}\\s+1\\s+scheduled\\s+fail\\s+500\\s`));
    const failed = await cli([
      "attempts",
      "browse-acme",
      "--msg",
      X.refunded[1]!,
      "--result",
      "fail",
      "--json",
    ]);
    expect(JSON.parse(failed.stdout).data.map((a: { endpointId: string }) => a.endpointId)).toEqual(
      [X.bad],
    );
    const both = await cli([
      "attempts",
      "browse-acme",
      "--msg",
      X.refunded[1]!,
      "--endpoint",
      "ok",
      "--json",
    ]);
    expect(JSON.parse(both.stdout).data.map((a: { endpointId: string }) => a.endpointId)).toEqual([
      X.ok,
    ]);
    const limited = await cli(["attempts", "browse-acme", "--endpoint", "ok", "--limit", "2"]);
    expect(limited.stdout).toMatch(/\nmore: --iterator \S+\n$/);
    const neither = await cli(["attempts", "browse-acme"]);
    expect(neither.code, show(neither)).toBe(2);
    expect(neither.stderr).toMatch(/say whose attempts: --msg or --endpoint/);
  });

  test("endpoints shows the app by its name and uid", async () => {
    const r = await cli(["endpoints", "--app", "browse-acme"]);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^${X.ok}\\s+Acme Browse \\(browse-acme\\)\\s+http`, "m"));
  });
});

describe.concurrent("failures", { timeout: 60_000 }, () => {
  test("--json: a failure is one JSON object with the stable code, exit codes unchanged", async () => {
    const missing = await cli(["msg", "get", "browse-acme", "msg_nope", "--json"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("");
    expect(JSON.parse(missing.stdout)).toEqual({
      error: { code: "not_found", message: "message not found", status: 404 },
    });
    const usage = await cli(["msg", "list", "browse-acme", "--status", "lost", "--json"]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toBe("");
    expect(JSON.parse(usage.stdout).error.code).toBe("invalid_config");
    const unknown = await cli(["msg", "lookup", "--json"]);
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stdout).error.message).toMatch(/unknown command 'lookup'/);
    const down = await cli(["status", "--json"], { env: { HOOKRELAY_URL: "http://127.0.0.1:9" } });
    expect(down.code).toBe(1);
    expect(JSON.parse(down.stdout).error).toMatchObject({ code: "server_unreachable" });
    const unauthorized = await cli(["status", "--json", "--key", "hr_admin_wrong"]);
    expect(unauthorized.code).toBe(1);
    expect(JSON.parse(unauthorized.stdout).error).toMatchObject({
      code: "unauthorized",
      status: 401,
    });
  });

  test("a refused key is named where it came from, not blamed on cli.json", async () => {
    const viaFlag = await cli(["status", "--key", "hr_admin_wrong"]);
    expect(viaFlag.code).toBe(1);
    expect(viaFlag.stderr).toMatch(
      new RegExp(
        `^hookrelay: the server at ${server.url} refused the key given by --key \\(401: .+\\) \\(unauthorized\\)\\n$`,
      ),
    );
    const viaEnv = await cli(["status"], { env: { HOOKRELAY_KEY: "hr_admin_wrong" } });
    expect(viaEnv.stderr).toMatch(/refused the key given by HOOKRELAY_KEY \(401/);
    // the server found through cli.json, with a wrong --key: the flag is to blame
    const local = await mkdtemp(path.join(tmpdir(), "hookrelay-cli-browse-local-"));
    try {
      await writeLocalCliAccess(local, { url: server.url, key: server.key, keyId: "key_x" });
      const r = await cli(["status", "--key", "hr_admin_wrong"], {
        env: { HOOKRELAY_URL: undefined, HOOKRELAY_KEY: undefined, HOOKRELAY_DATA_DIR: local },
      });
      expect(r.code, show(r)).toBe(1);
      expect(r.stderr).toMatch(/refused the key given by --key/);
      expect(r.stderr).not.toMatch(/cli\.json/);
      const fine = await cli(["status"], {
        env: { HOOKRELAY_URL: undefined, HOOKRELAY_KEY: undefined, HOOKRELAY_DATA_DIR: local },
      });
      expect(fine.code, show(fine)).toBe(0);
    } finally {
      await rm(local, { recursive: true, force: true });
    }
  });

  test("every policy flag refuses what the API refuses, with the table's bounds", async () => {
    const fields = (ENDPOINT_POLICY as readonly PolicyField[]).filter(
      (f): f is Extract<PolicyField, { sqlType: "integer" }> =>
        f.sqlType === "integer" && f.cli !== null,
    );
    expect(fields.map((f) => f.api)).toContain("maxAttempts");
    for (const f of fields) {
      const flag = f.cli!.flag.split(" ")[0]!;
      const arg = (n: number) => (f.cli!.value === "duration" ? `${n}ms` : String(n));
      for (const [value, ok] of [
        [f.min - 1, false],
        [f.min, true],
        [f.max, true],
        [f.max + 1, false],
      ] as const) {
        if (value < 0) continue; // a negative number is no flag value at all
        const api = await h.call("POST", `${V1}/app/${X.app}/endpoint`, {
          url: `${receiver.url}/bounds`,
          [f.api]: value,
          ...(f.api === "retryBaseMs" && { retryCapMs: f.max }),
          disabled: true,
        });
        const r = await cli(
          ["endpoint", "add", "browse-acme", `${receiver.url}/bounds`, flag, arg(value), "--json"],
          {
            env: { HOOKRELAY_URL: "http://127.0.0.1:9" }, // a flag refused never reaches a server
          },
        );
        if (ok) {
          expect(api.status, `${f.api} ${value}`).toBe(201);
          expect(r.code, `${flag} ${value}: ${show(r)}`).toBe(1); // got as far as the (absent) server
        } else {
          expect(api.status, `${f.api} ${value}`).toBe(422);
          expect(r.code, `${flag} ${value}: ${show(r)}`).toBe(2);
          expect(JSON.parse(r.stdout).error.message).toMatch(/the server's bounds/);
        }
      }
    }
    const zero = await cli([
      "endpoint",
      "add",
      "browse-acme",
      "http://127.0.0.1:9/x",
      "--max-attempts",
      "0",
    ]);
    expect(zero.code).toBe(2);
    expect(zero.stderr).toMatch(
      /--max-attempts <n>' argument '0' is invalid\. expected 1 to 100 \(the server's bounds\), got 0/,
    );
    const help = await cli(["endpoint", "add", "--help"]);
    expect(help.stdout).toMatch(/--max-attempts <n>\s+attempts before a dead letter \(1\.\.100\)/);
    expect(help.stdout).toMatch(
      /--timeout <duration>\s+deadline of one attempt \(15s, 500ms\)\s+\(100ms\.\.5m\)/,
    );
  });

  test("--retry-cap below --retry-base fails in the CLI as at the server", async () => {
    const r = await cli([
      "endpoint",
      "add",
      "browse-acme",
      "http://127.0.0.1:9/x",
      "--retry-base",
      "1m",
      "--retry-cap",
      "1s",
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--retry-cap must be at least --retry-base/);
    const api = await h.call("POST", `${V1}/app/${X.app}/endpoint`, {
      url: "http://127.0.0.1:9/x",
      retryBaseMs: 60_000,
      retryCapMs: 1_000,
    });
    expect(api.status).toBe(400);
  });
});
