/**
 * `api/` does not import its UIs (docs/architecture.md): the dashboard and the portal are
 * registered beside the API by src/http-app.ts, never from inside src/api.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { expect, test } from "vitest";

const apiDir = path.dirname(new URL(import.meta.url).pathname);

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sources(full)));
    else if (entry.name.endsWith(".ts")) out.push(full);
  }
  return out;
}

test("no module under src/api imports src/dashboard or src/portal", async () => {
  const files = await sources(apiDir);
  expect(files.length).toBeGreaterThan(20);
  const offenders: string[] = [];
  for (const file of files) {
    const text = await readFile(file, "utf8");
    for (const [, spec] of text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
      const target = path.resolve(path.dirname(file), spec!);
      const srcRelative = path.relative(path.resolve(apiDir, ".."), target);
      if (/^(dashboard|portal)\//.test(srcRelative))
        offenders.push(`${path.relative(apiDir, file)} imports ${spec}`);
    }
  }
  expect(offenders).toEqual([]);
});
