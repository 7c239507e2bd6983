/**
 * What every fault scenario's main module does the same way: the one app whose endpoints
 * are the fault receiver's URLs, created through the API as a user would, and the run's
 * ending (how a run that does not end by itself ends is lib/guard-run.ts).
 */
import type { SelfExit } from "./processes.ts";

async function post<T>(url: string, key: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Creates the run's app with one endpoint per receiver URL; answers the app's id. */
export async function createApp(
  apiUrl: string,
  key: string,
  name: string,
  urls: readonly string[],
): Promise<string> {
  const app = await post<{ id: string }>(apiUrl, key, "/api/v1/app", { name });
  for (const url of urls) {
    await post(apiUrl, key, `/api/v1/app/${app.id}/endpoint`, { url, description: name });
  }
  return app.id;
}

/**
 * The verdict every scenario ends with: self-exits and the API's 500 bodies printed, then
 * PASS or FAIL (a lost delivery, a process that exited on its own, an API 500); exits 1 on
 * FAIL, 0 on PASS.
 */
export function finishRun(
  facts: {
    selfExits: readonly SelfExit[];
    load: { samples500: readonly string[] };
  },
  figures: { lost: number; selfExits: number; api500: number },
): never {
  for (const e of facts.selfExits)
    process.stdout.write(
      `\nself-exit: ${e.role} ${e.pid} (code ${e.code}, ${e.signal}):\n${e.tail}\n`,
    );
  for (const body of facts.load.samples500) process.stdout.write(`\nAPI 500: ${body}\n`);
  const failed = figures.lost > 0 || figures.selfExits > 0 || figures.api500 > 0;
  process.stdout.write(
    `\n${failed ? "FAIL" : "PASS"}: lost ${figures.lost}, self-exits ${figures.selfExits}, API 500s ${figures.api500}\n`,
  );
  process.exit(failed ? 1 : 0);
}
