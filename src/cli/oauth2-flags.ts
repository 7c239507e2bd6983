/**
 * The OAuth2 flags of `endpoint add` and `endpoint update` (docs/oauth2.md): the token URL,
 * client id and secret (given, or read from a file so it stays out of shell history),
 * scope, audience and how the client authenticates. The API takes the settings whole: on
 * `update`, give the token URL and client id again; a secret left out keeps the stored one
 * (the API's `***`). `--oauth-token-url default` removes OAuth2.
 */
import { readFileSync } from "node:fs";
import { type Command, InvalidArgumentError } from "commander";
import { orDefault, RESET } from "./args.ts";

const AUTH_METHODS = ["client_secret_basic", "client_secret_post"];

const secretFile = (path: string): string => {
  try {
    return readFileSync(path, "utf8").replace(/\r?\n$/, "");
  } catch (err) {
    throw new InvalidArgumentError(`cannot read ${path}: ${(err as Error).message}`);
  }
};
const authMethod = (v: string): string => {
  if (!AUTH_METHODS.includes(v))
    throw new InvalidArgumentError(`one of ${AUTH_METHODS.join(", ")}`);
  return v;
};
const text = (v: string) => v;

export function withOAuth2Fields(c: Command, update: boolean): Command {
  return c
    .option(
      "--oauth-token-url <url>",
      `OAuth2 client credentials: the token endpoint (http or https); requests carry "Authorization: Bearer <token>"${update ? ' ("default" removes OAuth2)' : ""}`,
      update ? orDefault(text) : text,
    )
    .option("--oauth-client-id <id>", "OAuth2: the client id (with --oauth-token-url)")
    .option(
      "--oauth-client-secret <secret>",
      `OAuth2: the client secret, stored sealed${update ? " (left out: the stored one is kept)" : ""}`,
    )
    .option(
      "--oauth-client-secret-file <file>",
      "OAuth2: a file holding the client secret (a trailing newline is dropped)",
      secretFile,
    )
    .option("--oauth-scope <scope>", "OAuth2: the scope to ask for")
    .option("--oauth-audience <audience>", "OAuth2: the audience to ask for")
    .option(
      "--oauth-auth-method <method>",
      "OAuth2: client_secret_basic (default: a Basic header) or client_secret_post (form fields)",
      authMethod,
    );
}

/** The oauth2 field of a request body, from the parsed options (none when no flag is given). */
export function oauth2Body(o: Record<string, unknown>): Record<string, unknown> {
  const given = Object.keys(o).some((k) => k.startsWith("oauth"));
  if (!given) return {};
  if (o.oauthTokenUrl === RESET) return { oauth2: null };
  const oauth2: Record<string, unknown> = {
    tokenUrl: o.oauthTokenUrl,
    clientId: o.oauthClientId,
    // (the API's mask: keep the stored secret; a new endpoint has none and is refused)
    clientSecret: o.oauthClientSecret ?? o.oauthClientSecretFile ?? "***",
  };
  if (o.oauthScope !== undefined) oauth2.scope = o.oauthScope;
  if (o.oauthAudience !== undefined) oauth2.audience = o.oauthAudience;
  if (o.oauthAuthMethod !== undefined) oauth2.authMethod = o.oauthAuthMethod;
  return { oauth2 };
}
