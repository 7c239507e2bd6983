/** One task of the maintenance runner, built as runtime.ts builds them for `config`. */
import type { Config } from "../../src/config.ts";
import { silentLogger } from "../../src/logger.ts";
import type { MaintenanceTask } from "../../src/ops/maintenance.ts";
import { maintenanceTasks } from "../../src/runtime.ts";
import { makeRedactor } from "../../src/security/redact.ts";
import { makeSecretBox } from "../../src/security/secret-box.ts";

export function maintenanceTask(config: Config, name: string): MaintenanceTask {
  const task = maintenanceTasks(
    config,
    makeSecretBox(config.encryptionKey, config.encryptionKeyPrevious),
    makeRedactor(config.sensitiveFields),
    silentLogger,
  ).find((t) => t.name === name);
  if (!task) throw new Error(`no maintenance task named ${name}`);
  return task;
}
