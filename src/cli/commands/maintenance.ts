/**
 * secrets reencrypt, purge: jobs the server runs with its own keys and retention
 * settings, slice by slice, while this command shows the progress.
 */
import type { Command } from "commander";
import type { DroppedPartition } from "../../ops/attempt-partitions.ts";
import type { PurgeResult, PurgeTotals } from "../../ops/retention.ts";
import { cliIo } from "../io.ts";
import { ExitCode, type OutputOptions, print, table } from "../output.ts";
import { onServer, serverCommand } from "../server-command.ts";

export function registerMaintenanceCommands(program: Command): void {
  const secrets = program.command("secrets").description("signing secrets at rest");
  serverCommand(
    secrets,
    "reencrypt",
    "seal every signing secret under the server's HOOKRELAY_ENCRYPTION_KEY (after adding or rotating it)",
  ).action(
    onServer(async (server, o: OutputOptions) => {
      let after = 0;
      let total = 0;
      let encrypting = false;
      for (;;) {
        const r = await server.call<{
          reencrypted: number;
          after: number;
          done: boolean;
          encrypting: boolean;
        }>("POST", "/api/v1/operations/reencrypt-secrets", { after });
        total += r.reencrypted;
        after = r.after;
        encrypting = r.encrypting;
        if (!o.json) cliIo().stderr.write(`\r${total} secrets rewritten   `);
        if (r.done) break;
      }
      if (!o.json) cliIo().stderr.write("\n");
      print(o, { reencrypted: total, encrypted: encrypting }, () =>
        encrypting
          ? `${total} secrets sealed under the current key`
          : `${total} secrets stored unencrypted (the server has no HOOKRELAY_ENCRYPTION_KEY)`,
      );
      return ExitCode.ok;
    }),
  );

  serverCommand(
    program,
    "purge",
    "apply the server's retention settings now: drop the history periods past their age, delete the rest in batches",
  ).action(
    onServer(async (server, o: OutputOptions) => {
      const deleted: PurgeTotals = { attempts: 0, dead_letters: 0, messages: 0 };
      const droppedPartitions: DroppedPartition[] = [];
      let busyPartitions: string[] = [];
      for (;;) {
        const r = await server.call<PurgeResult>("POST", "/api/v1/operations/purge", {});
        for (const what of Object.keys(deleted) as (keyof PurgeTotals)[])
          deleted[what] += r.deleted[what];
        droppedPartitions.push(...r.droppedPartitions);
        // every slice tries the busy periods again: the last one says which are left
        busyPartitions = r.busyPartitions;
        if (!o.json)
          cliIo().stderr.write(
            `\r${Object.entries(deleted)
              .map(([what, n]) => `${what}: ${n}`)
              .join(", ")} deleted   `,
          );
        if (r.done) break;
      }
      if (!o.json) cliIo().stderr.write("\n");
      print(o, { ...deleted, droppedPartitions, busyPartitions }, () =>
        [
          table(["what", "deleted"], Object.entries(deleted)),
          ...droppedPartitions.map(
            (p) => `dropped ${p.name}${p.rows === null ? "" : ` (about ${p.rows} rows)`}`,
          ),
          ...busyPartitions.map(
            (name) => `left ${name}: statements under way held its lock; the next purge drops it`,
          ),
        ].join("\n"),
      );
      return ExitCode.ok;
    }),
  );
}
