/**
 * An application as the CLI shows it: its name, and its uid when it has one
 * ("Acme (acme)"), instead of its bare id. Each distinct app is asked for once
 * (GET /api/v1/app/{id}); one the key may not read, or that is gone, shows its id.
 */
import { enc } from "./args.ts";
import type { ServerConnection } from "./connection.ts";

interface App {
  id: string;
  name: string;
  uid: string | null;
}

/** "Acme (acme)", "Acme", or the id when the name is the id's only news. */
export const appLabel = (a: App) =>
  a.uid && a.uid !== a.name ? `${a.name} (${a.uid})` : a.name || a.id;

export interface AppNames {
  /** the label of each id asked for so far (the id itself when the app could not be read) */
  of(id: string | null | undefined): string | null;
}

/** Reads the apps of `ids` (at most a few distinct ones per page) and answers their labels. */
export async function appNames(
  server: ServerConnection,
  ids: Iterable<string | null | undefined>,
): Promise<AppNames> {
  const labels = new Map<string, string>();
  const distinct = [...new Set([...ids].filter((id): id is string => Boolean(id)))];
  await Promise.all(
    distinct.map(async (id) => {
      try {
        labels.set(id, appLabel(await server.call<App>("GET", `/api/v1/app/${enc(id)}`)));
      } catch {
        labels.set(id, id);
      }
    }),
  );
  return { of: (id) => (id ? (labels.get(id) ?? id) : null) };
}
