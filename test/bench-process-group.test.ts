/**
 * bench/lib/cpu.ts `processGroup`: the processes the bench counts as a broker's (scenario
 * 17's "CPU ms / 1k: the broker" rows). A server script started in a group of its own, as
 * test/helpers/rabbitmq.ts starts RabbitMQ, and what it runs are in; nothing else is.
 */
import { spawn } from "node:child_process";
import { afterAll, expect, test } from "vitest";
import { processGroup } from "../bench/lib/cpu.ts";
import { waitFor } from "./helpers/receiver.ts";

// a shell in a group of its own that starts a sleeping child, as a server script does
const script = spawn("sh", ["-c", "sleep 30 & echo $!; wait"], {
  detached: true,
  stdio: ["ignore", "pipe", "ignore"],
});

afterAll(() => {
  try {
    process.kill(-script.pid!, "SIGKILL");
  } catch {}
});

test("a process group's members: the script and its child, not this process", async () => {
  let out = "";
  script.stdout!.on("data", (b: Buffer) => {
    out += b.toString();
  });
  await waitFor(async () => /^\d+\n/.test(out), 5_000, "the child's pid");
  const child = Number(out.trim());
  const members = processGroup(script.pid!);
  expect(members).toEqual(expect.arrayContaining([script.pid, child]));
  expect(members).not.toContain(process.pid);
  expect(processGroup(2 ** 22 + 12_345)).toEqual([]);
});
