/**
 * Debian's nats-server with JetStream for the broker destination tests
 * (docs/destinations.md): one per test file, on a free 127.0.0.1 port, its store in a temp
 * directory, one user with every permission (`user`/`password`) and two with less
 * (`LIMITED_USERS`: for the permission errors), its monitoring endpoint on another free
 * port, stopped by its PID. It starts in well under a
 * second; `restart()` stops it and starts it again on the same port and store (the
 * streams survive).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { connect, type NatsConnection } from "nats";
import { freePort, portOpen, waitUntil } from "./broker-ports.ts";

export const NATS_SERVER = "/usr/sbin/nats-server";
export const natsInstalled = existsSync(NATS_SERVER);

/**
 * Users besides `user`, password = their name: `narrow` may publish to `hooks.narrow.>` only;
 * `deaf` may publish anywhere but subscribe to no `_INBOX.>` subject (where the stream's
 * acks come back).
 */
export const LIMITED_USERS = {
  narrow: 'permissions: { publish: { allow: ["hooks.narrow.>"] } }',
  deaf: 'permissions: { subscribe: { deny: ["_INBOX.>"] } }',
} as const;

export interface NatsServer {
  port: number;
  user: string;
  password: string;
  /** nats://user:password@127.0.0.1:port (another user, password, or a query, if given) */
  url(options?: { user?: string; password?: string; rest?: string }): string;
  /** a client connection of the test's own (closed by stop()) */
  client(): Promise<NatsConnection>;
  /**
   * client connections the server has open now with this client name (its monitoring
   * endpoint's /connz; hookrelay's are named "hookrelay")
   */
  connections(name: string): Promise<number>;
  /** the running server's pid (null while it is down) */
  pid(): number | null;
  /** stops the server (its clients see it go) */
  down(): Promise<void>;
  /** starts it again on the same port and store */
  up(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * PEM files for a TLS-only server: its certificate (for localhost) and key, the CA of
 * clients' (which signed the server's too), and a client certificate of that CA for the
 * helper's own client.
 */
export interface NatsTls {
  certFile: string;
  keyFile: string;
  caFile: string;
  clientCertFile: string;
  clientKeyFile: string;
}

/**
 * With `token`, the server takes that token instead of any user (`client()` uses it).
 * With `tls`, the server takes TLS connections only (upgraded after its INFO, as NATS
 * does) with that certificate, and requires a client certificate its CA signed.
 */
export async function startNats(
  options: { tls?: NatsTls; token?: string } = {},
): Promise<NatsServer> {
  const dir = await mkdtemp(path.join(tmpdir(), "hookrelay-nats-"));
  const port = await freePort();
  const monitorPort = await freePort();
  const user = "hookrelay";
  const password = "nats-secret-1";
  const config = path.join(dir, "nats.conf");
  await writeFile(
    config,
    [
      `listen: 127.0.0.1:${port}`,
      `http: 127.0.0.1:${monitorPort}`,
      `jetstream { store_dir: "${path.join(dir, "store")}" }`,
      ...(options.tls
        ? [
            "tls {",
            `  cert_file: "${options.tls.certFile}"`,
            `  key_file: "${options.tls.keyFile}"`,
            `  ca_file: "${options.tls.caFile}"`,
            "  verify: true",
            "}",
          ]
        : []),
      ...(options.token
        ? [`authorization { token: "${options.token}" }`]
        : [
            "authorization { users = [",
            `  { user: "${user}", password: "${password}" }`,
            ...Object.entries(LIMITED_USERS).map(
              ([name, permissions]) => `  { user: "${name}", password: "${name}", ${permissions} }`,
            ),
            "] }",
          ]),
      "",
    ].join("\n"),
  );
  let child: ChildProcess | null = null;
  let output = "";
  const clients: NatsConnection[] = [];

  async function up(): Promise<void> {
    const c = spawn(NATS_SERVER, ["-c", config], { stdio: ["ignore", "pipe", "pipe"] });
    c.stdout?.on("data", (b: Buffer) => {
      output = (output + b.toString()).slice(-4000);
    });
    c.stderr?.on("data", (b: Buffer) => {
      output = (output + b.toString()).slice(-4000);
    });
    child = c;
    await waitUntil(
      "nats-server",
      () => portOpen(port),
      c,
      20_000,
      () => output,
    );
  }

  async function down(): Promise<void> {
    const c = child;
    child = null;
    if (c === null || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((resolve) => c.once("exit", resolve));
    c.kill("SIGTERM");
    const timer = setTimeout(() => c.kill("SIGKILL"), 10_000);
    await gone;
    clearTimeout(timer);
  }

  await up();
  return {
    port,
    user,
    password,
    url: (o = {}) =>
      `nats://${o.user ?? user}:${encodeURIComponent(o.password ?? password)}@127.0.0.1:${port}${o.rest ?? ""}`,
    async client() {
      const tls = options.tls;
      const c = await connect({
        // (the server's certificate names localhost)
        servers: `${tls ? "localhost" : "127.0.0.1"}:${port}`,
        ...(options.token ? { token: options.token } : { user, pass: password }),
        ...(tls && {
          tls: { caFile: tls.caFile, certFile: tls.clientCertFile, keyFile: tls.clientKeyFile },
        }),
      });
      clients.push(c);
      return c;
    },
    async connections(name) {
      const res = await fetch(`http://127.0.0.1:${monitorPort}/connz?limit=1024`);
      const body = (await res.json()) as { connections?: Array<{ name?: string }> };
      return (body.connections ?? []).filter((c) => c.name === name).length;
    },
    pid: () => child?.pid ?? null,
    down,
    up,
    async stop() {
      for (const c of clients) await c.close().catch(() => {});
      await down();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
