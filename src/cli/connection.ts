/**
 * The operator commands talk to a running hookrelay over its HTTP API, so what they show
 * and allow is what the server answers: its SSRF allowlist, its alert thresholds, its
 * retention and encryption keys (docs/cli.md). The server is `--url`/HOOKRELAY_URL with
 * `--key`/HOOKRELAY_KEY, or by default the one `npm start` runs in this folder, found
 * through `<dataDir>/cli.json`.
 *
 * Only Node built-ins and tiny modules are imported here: a command starts in a blink.
 */
import { InvalidArgumentError } from "commander";
import { type ClientConfig, loadClientConfig } from "../config.ts";
import { ApiError, errorCodeOf, HookRelayError } from "../errors.ts";
import { localCliAccessFile, readLocalCliAccess } from "../security/local-cli-access.ts";
import { cliIo } from "./io.ts";

export type HttpMethod = "GET" | "POST" | "PATCH" | "PUT" | "DELETE";

export interface ServerConnection {
  /** the API's base URL */
  url: string;
  /** a JSON request; throws ApiError for a 4xx/5xx answer */
  call<T = unknown>(method: HttpMethod, path: string, body?: unknown): Promise<T>;
  /**
   * A GET of a text document outside the API's key (`/metrics`): sent with `authorization`
   * (null: none); throws ApiError for a 4xx/5xx answer.
   */
  text(path: string, authorization: string | null): Promise<string>;
}

/** No answer from the server at all; its message names the URL and the reason already. */
export class ServerUnreachableError extends HookRelayError {
  constructor(message: string, options: { cause: unknown }) {
    super("server_unreachable", message, options);
  }
}

/** Where the key came from, so a refusal names it (a 401 is about the key, not the server). */
type KeySource = "--key" | "HOOKRELAY_KEY" | "cli.json";

export interface ConnectionFlags {
  url?: string;
  key?: string;
}

/** How long one request may take; long jobs (purge, re-encryption) answer in slices. */
const REQUEST_TIMEOUT_MS = 120_000;

function baseUrl(raw: string, from: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidArgumentError(`${from} must be a URL such as http://127.0.0.1:8787`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new InvalidArgumentError(`${from} must be an http:// or https:// URL`);
  return url.toString().replace(/\/+$/, "");
}

/** Resolves which server to talk to and with which key; no request is made yet. */
export async function connect(
  flags: ConnectionFlags,
  config: ClientConfig = loadClientConfig(cliIo().env),
): Promise<ServerConnection> {
  const given = flags.url ?? config.serverUrl;
  let url = given === undefined ? undefined : baseUrl(given, flags.url ? "--url" : "HOOKRELAY_URL");
  let key = flags.key ?? config.apiKey;
  let keySource: KeySource = flags.key !== undefined ? "--key" : "HOOKRELAY_KEY";
  let local = false;
  if (!url || !key) {
    const access = await readLocalCliAccess(config.dataDir);
    if (access && (!url || url === baseUrl(access.url, "cli.json"))) {
      url = baseUrl(access.url, "cli.json");
      if (key === undefined) {
        key = access.key;
        keySource = "cli.json";
      }
      local = true;
    }
  }
  if (!url) {
    throw new InvalidArgumentError(
      `no hookrelay server given and none found in ${localCliAccessFile(config.dataDir)}: ` +
        "start one here with `npm start`, or pass --url and --key (HOOKRELAY_URL, HOOKRELAY_KEY)",
    );
  }
  if (!key)
    throw new InvalidArgumentError(`no API key for ${url}: pass --key or set HOOKRELAY_KEY`);
  const base = url;
  const authorization = `Bearer ${key}`;

  /** fetch with the timeout, its failure to connect said in words */
  async function send(path: string, init: RequestInit): Promise<Response> {
    try {
      return await fetch(`${base}${path}`, {
        ...init,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new ServerUnreachableError(
        local
          ? `the local hookrelay at ${base} does not answer (${reason}): is \`npm start\` running in this folder?`
          : `cannot reach hookrelay at ${base} (${reason})`,
        { cause: err },
      );
    }
  }

  /** The API's refusal as an ApiError whose message names the real cause. */
  function refusal(res: Response, text: string, parsed: unknown): ApiError {
    const problem = (parsed ?? {}) as { code?: string; detail?: string };
    const detail = problem.detail ?? (text.slice(0, 500) || res.statusText);
    return new ApiError(res.status, errorCodeOf(problem.code), detail);
  }

  return {
    url: base,
    async call<T>(method: HttpMethod, path: string, body?: unknown): Promise<T> {
      const res = await send(path, {
        method,
        headers: {
          authorization,
          accept: "application/json",
          ...(body !== undefined && { "content-type": "application/json" }),
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      let parsed: unknown = null;
      if (text) {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = null;
        }
      }
      if (res.status === 401) {
        const problem = refusal(res, text, parsed);
        throw new ApiError(
          401,
          problem.code,
          keySource === "cli.json"
            ? `the server at ${base} refused the key (401: ${problem.message}); the key in cli.json is no longer valid: restart \`npm start\` to renew it`
            : `the server at ${base} refused the key given by ${keySource} (401: ${problem.message})`,
        );
      }
      if (!res.ok) throw refusal(res, text, parsed);
      return parsed as T;
    },
    async text(path: string, auth: string | null): Promise<string> {
      const res = await send(path, {
        headers: { accept: "text/plain", ...(auth !== null && { authorization: auth }) },
      });
      const text = await res.text();
      if (res.ok) return text;
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = null;
      }
      throw refusal(res, text, parsed);
    },
  };
}
