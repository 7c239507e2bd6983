/**
 * `<dataDir>/cli.json`: how the `hookrelay` CLI finds the server that `npm start` runs in
 * the same folder. The API process writes its URL and an admin key there (mode 0600) when
 * it runs on the embedded database, whose password already lives in the same folder: who
 * can read the folder can already do anything, so the file grants nothing new. With an
 * external DATABASE_URL no file is written and the CLI is given --url and --key.
 * See docs/cli.md.
 */
import { randomBytes } from "node:crypto";
import { readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";

export interface LocalCliAccess {
  /** the API's base URL, e.g. http://127.0.0.1:8787 */
  url: string;
  /** an admin API key made for the local CLI */
  key: string;
  keyId: string;
}

export const localCliAccessFile = (dataDir: string) => path.join(dataDir, "cli.json");

/** The file's contents, or null when there is none (or it is not ours). */
export async function readLocalCliAccess(dataDir: string): Promise<LocalCliAccess | null> {
  let text: string;
  try {
    text = await readFile(localCliAccessFile(dataDir), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as Partial<LocalCliAccess>;
    if (
      typeof parsed.url === "string" &&
      typeof parsed.key === "string" &&
      typeof parsed.keyId === "string"
    ) {
      return { url: parsed.url, key: parsed.key, keyId: parsed.keyId };
    }
  } catch {
    // a half-written or foreign file: treated as absent, the server rewrites it
  }
  return null;
}

/** Replaces the file atomically: a reader sees the old contents or the new, never half. */
export async function writeLocalCliAccess(dataDir: string, access: LocalCliAccess): Promise<void> {
  const file = localCliAccessFile(dataDir);
  const temp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  await writeFile(temp, `${JSON.stringify(access, null, 2)}\n`, { mode: 0o600 });
  await rename(temp, file);
}
