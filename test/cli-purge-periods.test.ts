/**
 * `hookrelay purge` prints the history periods retention dropped and the ones it had to
 * leave (a detach whose lock statements under way kept taken), as the README promises:
 * "prints a line for each period it dropped and each it left".
 */
import pg from "pg";
import { afterAll, beforeAll, expect, test } from "vitest";
import { createApiKey } from "../src/api/auth.ts";
import { ensureAttemptPartitions, partitionName } from "../src/ops/attempt-partitions.ts";
import { cliAgainst, listenOnLoopback, show } from "./helpers/cli.ts";
import { type Harness, startHarness } from "./helpers/harness.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const RETENTION_DAYS = 3;
const old = (() => {
  const t = Date.now() - 5 * DAY;
  return t - (t % DAY);
})();
const period = partitionName(old, "day", "attempts");

let h: Harness;
let server: { url: string; key: string };
const cli = cliAgainst(() => ({ ...server, dir: "" }));

beforeAll(async () => {
  h = await startHarness({
    retention: {
      payloadMs: RETENTION_DAYS * DAY,
      attemptsMs: RETENTION_DAYS * DAY,
      deadLetterMs: 10 * DAY,
      batch: 1_000,
    },
  });
  const key = await createApiKey(h.db.pool, { role: "admin" }, "cli purge test");
  server = { url: await listenOnLoopback(h.api), key: key.key };
});
afterAll(() => h?.close());

/** An attempts period five days old, past the three days' retention. */
const oldPeriod = () =>
  ensureAttemptPartitions(h.db.pool, { interval: "day", aheadMs: 0 }, 8 * DAY, old);

test("a period past retention: the purge prints it as dropped, and --json lists it", async () => {
  await oldPeriod();
  const r = await cli(["purge"]);
  expect(r.code, show(r)).toBe(0);
  expect(r.stdout).toMatch(new RegExp(`^dropped ${period}( \\(about \\d+ rows\\))?$`, "m"));
  expect(r.stdout).not.toMatch(/^left /m);

  await oldPeriod();
  const json = await cli(["purge", "--json"]);
  expect(json.code, show(json)).toBe(0);
  const answer = JSON.parse(json.stdout);
  expect(answer.droppedPartitions.map((p: { name: string }) => p.name)).toContain(period);
  expect(answer.busyPartitions).toEqual([]);
  expect(answer).toMatchObject({ attempts: expect.any(Number), messages: expect.any(Number) });
});

test("a period whose lock a reader holds: the purge prints it as left, the next one drops it", async () => {
  await oldPeriod();
  const reader = new pg.Client({ connectionString: h.db.url });
  reader.on("error", () => undefined);
  await reader.connect();
  let r: Awaited<ReturnType<typeof cli>>;
  try {
    await reader.query("begin");
    await reader.query("select count(*) from attempts");
    r = await cli(["purge"]);
  } finally {
    await reader.query("rollback").catch(() => undefined);
    await reader.end();
  }
  expect(r.code, show(r)).toBe(0);
  expect(r.stdout).toContain(
    `left ${period}: statements under way held its lock; the next purge drops it`,
  );
  expect(r.stdout).not.toMatch(new RegExp(`^dropped ${period}`, "m"));

  const again = await cli(["purge"]);
  expect(again.stdout).toMatch(new RegExp(`^dropped ${period}`, "m"));
}, 60_000);
