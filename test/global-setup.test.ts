/**
 * The suite's global setup starts one throwaway PostgreSQL and migrates a template in it.
 * When the migration fails, setup must stop that cluster and remove its files before it
 * reports the error: nothing else would ever stop it.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { expect, test } from "vitest";
import { startTemplateCluster } from "./helpers/global-setup.ts";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test("a failing migration stops the cluster setup started and removes its folder", async () => {
  let postmaster = 0;
  let clusterDir = "";
  const failing = startTemplateCluster(async (_url, dir) => {
    clusterDir = dir;
    postmaster = Number((await readFile(path.join(dir, "postmaster.pid"), "utf8")).split("\n")[0]);
    throw new Error("migration 0999 is broken");
  });
  await expect(failing).rejects.toThrow("migration 0999 is broken");
  expect(postmaster).toBeGreaterThan(0);
  expect(alive(postmaster)).toBe(false);
  expect(existsSync(clusterDir)).toBe(false);
});
