/**
 * endpoint add | list | update | disable | enable | delete | secret | rotate-secret. The delivery
 * policy of an endpoint (timeout, retries, in-flight cap, circuit, rate limits, what it does
 * while disabled) is set
 * with the same flags on `add` and `update`; on `update`, `default` clears one. So are the
 * postback settings (method, body format, URL token, missing fields, success rule).
 */
import { type Command, InvalidArgumentError } from "commander";
import { DISABLE_HELP, ENABLE_HELP } from "../../domain/while-disabled.ts";
import { makeRedactor } from "../../security/redact.ts";
import { enc, headerArg, intArg, list, orDefault, RESET } from "../args.ts";
import { egressBody, withEgressFields } from "../egress-flags.ts";
import { oauth2Body, withOAuth2Fields } from "../oauth2-flags.ts";
import { ExitCode, type OutputOptions, print, table } from "../output.ts";
import { checkAtLeast, optionKey, POLICY } from "../policy-flags.ts";
import { onServer, serverCommand } from "../server-command.ts";

// biome-ignore lint/suspicious/noExplicitAny: API responses are rendered field by field
type Json = any;

function withEndpointFields(c: Command, update: boolean): Command {
  c.option("--event-types <types>", "comma-separated event types (default: all)", list)
    .option("--uid <uid>", "your own identifier for it")
    .option("--description <text>", "a note for people")
    .option("--header <name=value>", "a header sent with every delivery (repeatable)", headerArg);
  c.option(
    "--signature-scheme <scheme>",
    "how it signs: v1 (HMAC, whsec_), v1a (Ed25519, the receiver gets the whpk_ public key) or v1+v1a",
    schemeArg,
  );
  for (const [flag, , parse, help] of POLICY) {
    c.option(
      flag,
      update ? `${help} ("default" resets it)` : help,
      update ? orDefault(parse) : parse,
    );
  }
  // egress: pool, proxy, mTLS (docs/egress.md)
  withEgressFields(c, update);
  // OAuth2 client credentials (docs/oauth2.md)
  withOAuth2Fields(c, update);
  // postback endpoints
  return withPostbackFields(c, update);
}

// ---------------------------------------------------------------- postback endpoints
// (README.md, Postbacks) method, body format, URL token, missing fields, success rule

const choice =
  (allowed: readonly string[], upper = false) =>
  (v: string): string => {
    const value = upper ? v.toUpperCase() : v.toLowerCase();
    if (!allowed.includes(value))
      throw new InvalidArgumentError(`expected one of ${allowed.join(", ")}`);
    return value;
  };
const repeatable = (v: string, previous: string[] = []) => [...previous, v];

/** A URL as the pages show it (the server's default sensitive fields). */
const shownUrl = (url: string) => makeRedactor().url(url);

/** flag, API field, parser, help, the value `default` stands for on update */
const POSTBACK: ReadonlyArray<
  readonly [string, string, (v: string) => string, string, string | null]
> = [
  [
    "--method <method>",
    "method",
    choice(["POST", "GET", "PUT"], true),
    "POST (default), GET (no body) or PUT",
    "POST",
  ],
  [
    "--body-format <format>",
    "bodyFormat",
    choice(["json", "form"]),
    "json (default) or form (the payload's top-level fields, form-encoded)",
    "json",
  ],
  [
    "--url-token <token>",
    "urlToken",
    (v) => v,
    "the value of {$token} in a URL template (stored sealed)",
    null,
  ],
  [
    "--missing-fields <choice>",
    "missingFields",
    choice(["fail", "empty"]),
    "a payload without a templated field: fail (a dead letter) or empty",
    "fail",
  ],
];

function withPostbackFields(c: Command, update: boolean): Command {
  for (const [flag, , parse, help] of POSTBACK)
    c.option(
      flag,
      update ? `${help} ("default" resets it)` : help,
      update ? orDefault(parse) : parse,
    );
  c.option(
    "--success-contains <text>",
    "a 2xx body must contain this (repeatable: any one of them)",
    repeatable,
  )
    .option(
      "--success-not-contains <text>",
      "... and must not contain this (repeatable)",
      repeatable,
    )
    .option("--success-ignore-case", "compare the success texts without regard to case")
    .option(
      "--body-failure <choice>",
      "a body that breaks the rule: retry (default) or permanent",
      choice(["retry", "permanent"]),
    );
  if (update) c.option("--no-success-rule", "remove the success rule");
  return c;
}

function postbackBody(o: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [flag, field, , , reset] of POSTBACK) {
    const v = o[optionKey(flag)];
    if (v !== undefined) body[field] = v === RESET ? reset : v;
  }
  const contains = o.successContains as string[] | undefined;
  const notContains = o.successNotContains as string[] | undefined;
  if (contains || notContains || o.successIgnoreCase || o.bodyFailure) {
    if (!contains && !notContains)
      throw new InvalidArgumentError(
        "a success rule needs --success-contains or --success-not-contains",
      );
    body.successRule = {
      ...(contains && { bodyContains: contains }),
      ...(notContains && { bodyNotContains: notContains }),
      ...(o.successIgnoreCase ? { ignoreCase: true } : {}),
      ...(o.bodyFailure ? { onFailure: o.bodyFailure } : {}),
    };
  } else if (o.successRule === false) {
    body.successRule = null;
  }
  return body;
}

function endpointBody(o: Record<string, unknown>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (o.endpointUrl !== undefined) body.url = o.endpointUrl;
  if (o.eventTypes !== undefined) body.eventTypes = o.eventTypes;
  if (o.uid !== undefined) body.uid = o.uid;
  if (o.description !== undefined) body.description = o.description;
  if (o.header !== undefined) body.headers = o.header;
  if (o.signatureScheme !== undefined) body.signatureScheme = o.signatureScheme;
  for (const [flag, field] of POLICY) {
    const v = o[optionKey(flag)];
    if (v !== undefined) body[field] = v === RESET ? null : v;
  }
  checkAtLeast(body);
  // postback endpoints
  Object.assign(body, postbackBody(o));
  // egress
  Object.assign(body, egressBody(o));
  // OAuth2
  Object.assign(body, oauth2Body(o));
  return body;
}

const SCHEMES = ["v1", "v1a", "v1+v1a"];
function schemeArg(value: string): string {
  if (!SCHEMES.includes(value)) throw new InvalidArgumentError(`one of ${SCHEMES.join(", ")}`);
  return value;
}

/** What a receiver needs to verify: the HMAC secret and/or the Ed25519 public key. */
function keysText(s: Json, prefix = ""): string {
  const lines: string[] = [];
  if (s.key?.startsWith("whsec_")) lines.push(`${prefix}signing secret: ${s.key}`);
  if (s.publicKey) lines.push(`${prefix}public key (Ed25519, v1a): ${s.publicKey}`);
  return lines.join("\n");
}

export function registerEndpointCommands(program: Command): void {
  const endpoint = program
    .command("endpoint")
    .description("endpoints of an application: add, list, update, disable, enable, delete");

  withEndpointFields(
    serverCommand(
      endpoint,
      "add <app> <url>",
      "add an endpoint (an http(s) URL, or a broker's amqp:// or nats:// URL: docs/destinations.md); prints its signing secret (or Ed25519 public key)",
    ),
    false,
  ).action(
    onServer(async (server, appId: string, url: string, o: OutputOptions) => {
      const e: Json = await server.call("POST", `/api/v1/app/${enc(appId)}/endpoint`, {
        ...endpointBody(o as Record<string, unknown>),
        url,
      });
      const secret: Json = await server.call(
        "GET",
        `/api/v1/app/${enc(appId)}/endpoint/${e.id}/secret`,
      );
      print(
        o,
        { ...e, secret: secret.key, publicKey: secret.publicKey },
        () => `created ${e.id}\n${keysText(secret)}`,
      );
      return ExitCode.ok;
    }),
  );

  serverCommand(
    endpoint,
    "secret <app> <endpoint>",
    "what its receiver verifies with: the whsec_ secret and/or the whpk_ public key",
  ).action(
    onServer(async (server, appId: string, ep: string, o: OutputOptions) => {
      const s: Json = await server.call(
        "GET",
        `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}/secret`,
      );
      print(o, s, () => keysText(s));
      return ExitCode.ok;
    }),
  );

  serverCommand(endpoint, "list <app>", "the endpoints of an application").action(
    onServer(async (server, appId: string, o: OutputOptions) => {
      const page: Json = await server.call("GET", `/api/v1/app/${enc(appId)}/endpoint?limit=250`);
      print(o, page.data, () =>
        table(
          ["id", "uid", "url", "event types", "disabled"],
          page.data.map((e: Json) => [
            e.id,
            e.uid,
            // as the pages show it: a template as written, sensitive values masked (--json
            // prints the API's answer as it is)
            shownUrl(e.url),
            e.eventTypes?.join(",") ?? "all",
            e.disabled ? (e.disabledReason ?? "yes") : "no",
          ]),
        ),
      );
      return ExitCode.ok;
    }),
  );

  withEndpointFields(
    serverCommand(
      endpoint,
      "update <app> <endpoint>",
      "change an endpoint's URL, filters or policy",
    ),
    true,
  )
    .option("--endpoint-url <url>", "where deliveries go (--url names the hookrelay server)")
    .action(
      onServer(async (server, appId: string, ep: string, o: OutputOptions) => {
        const body = endpointBody(o as Record<string, unknown>);
        if (Object.keys(body).length === 0)
          throw new InvalidArgumentError("nothing to change: give at least one field flag");
        const e: Json = await server.call(
          "PATCH",
          `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}`,
          body,
        );
        print(o, e, () => `updated ${e.id}`);
        return ExitCode.ok;
      }),
    );

  for (const [verb, disabled] of [
    ["disable", true],
    ["enable", false],
  ] as const) {
    serverCommand(
      endpoint,
      `${verb} <app> <endpoint>`,
      // the disabled-endpoint contract (domain/while-disabled.ts)
      disabled ? DISABLE_HELP : ENABLE_HELP,
    ).action(
      onServer(async (server, appId: string, ep: string, o: OutputOptions) => {
        const e: Json = await server.call(
          "PATCH",
          `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}`,
          {
            disabled,
          },
        );
        print(o, e, () => `${e.id} ${disabled ? "disabled" : "enabled"}`);
        return ExitCode.ok;
      }),
    );
  }

  serverCommand(endpoint, "delete <app> <endpoint>", "delete an endpoint and its delivery history")
    .option("--yes", "confirm: this cannot be undone")
    .action(
      onServer(async (server, appId: string, ep: string, o: OutputOptions & { yes?: boolean }) => {
        if (!o.yes) {
          throw new InvalidArgumentError(
            `deleting ${ep} removes its deliveries and attempts for good; add --yes to confirm`,
          );
        }
        await server.call("DELETE", `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}`);
        print(o, { deleted: ep }, () => `deleted ${ep}`);
        return ExitCode.ok;
      }),
    );

  serverCommand(
    endpoint,
    "rotate-secret <app> <endpoint>",
    "a new signing secret; the old one keeps signing for the grace period",
  )
    .option("--grace <seconds>", "how long the old secret keeps signing", intArg)
    .option(
      "--scheme <scheme>",
      "the new keys' scheme: v1, v1a (rotate to Ed25519) or v1+v1a (default: as now)",
      schemeArg,
    )
    .action(
      onServer(
        async (
          server,
          appId: string,
          ep: string,
          o: OutputOptions & { grace?: number; scheme?: string },
        ) => {
          const base = `/api/v1/app/${enc(appId)}/endpoint/${enc(ep)}/secret`;
          await server.call("POST", `${base}/rotate`, {
            ...(o.grace !== undefined && { gracePeriodSeconds: o.grace }),
            ...(o.scheme !== undefined && { scheme: o.scheme }),
          });
          const s: Json = await server.call("GET", base);
          print(o, s, () => keysText(s, "new "));
          return ExitCode.ok;
        },
      ),
    );
}
