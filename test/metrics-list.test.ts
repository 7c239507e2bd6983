/**
 * docs/telemetry.md lists every metric family /metrics exposes, with its type and labels:
 * this file keeps that list equal to a scrape of makeMetrics() (hookrelay's families and
 * Node's process metrics), and checks the documented bound of the `app` label.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, test } from "vitest";
import { makeMetrics } from "../src/ops/metrics.ts";
import type { DeliveryResult } from "../src/queue/record-results.ts";
import { createTestDb, type TestDb } from "./helpers/db.ts";

interface Listed {
  type: string;
  labels: string[];
}

/** The metric tables of docs/telemetry.md: name -> type and labels. */
function documented(): Map<string, Listed> {
  const text = readFileSync(new URL("../docs/telemetry.md", import.meta.url), "utf8");
  const out = new Map<string, Listed>();
  for (const line of text.split("\n")) {
    const m = /^\| `(hookrelay_[a-z0-9_]+)` \| (\w+) \|([^|]*)\|/.exec(line);
    if (!m) continue;
    const labels = [...m[3]!.matchAll(/`([a-z_]+)`/g)].map((l) => l[1]!);
    out.set(m[1]!, { type: m[2]!, labels });
  }
  return out;
}

let db: TestDb;
beforeAll(async () => {
  db = await createTestDb();
});
afterAll(async () => {
  await db?.drop();
});

const result = (appId: string, n: number): DeliveryResult =>
  ({
    deliveryId: n,
    claimToken: "00000000-0000-0000-0000-000000000000",
    messageId: `msg_${n}`,
    endpointId: "ep_a",
    appId,
    trigger: "scheduled",
    url: "http://x",
    attemptNumber: 1,
    nextStatus: "delivered",
    retryDelayMs: 0,
    startedAt: new Date(),
    latencyMs: 5,
    success: true,
    statusCode: 200,
    errorKind: null,
    error: null,
    responseBody: null,
    isProbe: false,
    pauseMs: null,
  }) as DeliveryResult;

test("docs/telemetry.md lists exactly the families, types and labels /metrics exposes", async () => {
  const m = makeMetrics({ pool: db.pool, maxEndpointLabels: 10 });
  m.recordResults([result("app_one", 1)]);
  const text = await m.render();
  const exposed = new Map<string, string>();
  for (const t of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) exposed.set(t[1]!, t[2]!);
  const listed = documented();
  // /proc-based families exist on Linux only (the document says so)
  const linuxOnly = [...listed.keys()].filter((n) =>
    /process_(resident|virtual|heap_bytes|open_fds|max_fds)/.test(n),
  );
  if (process.platform !== "linux") for (const n of linuxOnly) listed.delete(n);

  expect([...exposed.keys()].sort()).toEqual([...listed.keys()].sort());
  for (const [name, type] of exposed)
    expect(`${name} ${listed.get(name)?.type}`).toBe(`${name} ${type}`);
  // each family's declared labels, and every label a sample carries (histograms add `le`)
  for (const metric of m.registry.getMetricsAsArray()) {
    const declared = [...((metric as unknown as { labelNames?: string[] }).labelNames ?? [])];
    expect(`${metric.name}: ${declared.sort().join(",")}`).toBe(
      `${metric.name}: ${[...(listed.get(metric.name)?.labels ?? [])].sort().join(",")}`,
    );
  }
  for (const s of text.matchAll(/^([a-z_0-9]+)\{([^}]*)\} /gm)) {
    const family = s[1]!.replace(/_(bucket|sum|count)$/, "");
    const name = listed.has(s[1]!) ? s[1]! : family;
    for (const l of s[2]!.matchAll(/([a-z_]+)="/g)) {
      if (l[1] === "le") continue;
      expect(listed.get(name)?.labels, `${name}'s label ${l[1]}`).toContain(l[1]);
    }
  }
});

test('the app label: the first maxAppLabels applications by id, the rest app="other"', async () => {
  const m = makeMetrics({ pool: db.pool, maxEndpointLabels: 10, maxAppLabels: 2 });
  m.recordResults([result("app_a", 1), result("app_b", 2), result("app_c", 3)]);
  m.recordResults([result("app_d", 4), result("app_a", 5)]);
  const text = await m.render();
  const apps = (family: string) =>
    [...text.matchAll(new RegExp(`^${family}\\{[^}]*app="([^"]+)"[^}]*\\} (\\S+)$`, "gm"))]
      .map((s) => `${s[1]}=${s[2]}`)
      .sort();
  expect(apps("hookrelay_deliveries_total")).toEqual(["app_a=2", "app_b=1", "other=2"]);
  expect(apps("hookrelay_attempts_total")).toEqual(["app_a=2", "app_b=1", "other=2"]);
});

test("Node's process metrics are there, prefixed", async () => {
  const m = makeMetrics({ pool: db.pool, maxEndpointLabels: 10 });
  const text = await m.render();
  expect(text).toMatch(/^hookrelay_process_cpu_seconds_total \d/m);
  expect(text).toMatch(/^hookrelay_nodejs_heap_size_used_bytes \d/m);
  expect(text).toMatch(/^hookrelay_nodejs_version_info\{version="v\d+/m);
});
