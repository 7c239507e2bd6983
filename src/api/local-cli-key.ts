/**
 * The admin key the local CLI uses (docs/cli.md): made once, kept in `<dataDir>/cli.json`,
 * reused on every start while it is still valid, replaced when it was revoked or the
 * database was reset.
 */
import type { Queryable } from "../db/pool.ts";
import { isActiveAdminKey } from "../db/queries/api-keys.ts";
import {
  type LocalCliAccess,
  readLocalCliAccess,
  writeLocalCliAccess,
} from "../security/local-cli-access.ts";
import { createApiKey, hashKey } from "./auth.ts";

export const LOCAL_CLI_KEY_NAME = "local CLI (cli.json in the data folder)";

/** Writes `<dataDir>/cli.json` for an API reachable at `apiUrl`; returns what it wrote. */
export async function provideLocalCliAccess(
  db: Queryable,
  dataDir: string,
  apiUrl: string,
): Promise<LocalCliAccess> {
  const existing = await readLocalCliAccess(dataDir);
  let key =
    existing && (await isActiveAdminKey(db, existing.keyId, hashKey(existing.key)))
      ? existing
      : null;
  if (!key) {
    const created = await createApiKey(db, { role: "admin" }, LOCAL_CLI_KEY_NAME);
    key = { url: apiUrl, key: created.key, keyId: created.id };
  }
  const access = { url: apiUrl, key: key.key, keyId: key.keyId };
  await writeLocalCliAccess(dataDir, access);
  return access;
}

/** The URL a client on this machine uses for a server listening on `host`. */
export function localClientUrl(host: string, port: number): string {
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
}
