/**
 * Debian's RabbitMQ as a throwaway node for the broker destination tests
 * (docs/destinations.md): one per test file, everything of it in a temp directory (its
 * mnesia database, logs, configuration, enabled plugins: none, the Erlang cookie under
 * HOME), its AMQP listener, distribution port and epmd on free 127.0.0.1 ports. This
 * helper starts its own epmd in the foreground (so no system epmd is touched or left
 * behind) and stops both by PID. It starts in about 10-20 s.
 *
 * The node has one user (`user`/`password`) on the default virtual host, from anywhere;
 * a test adds others, and virtual hosts, with `ctl` (rabbitmqctl against the node).
 * Given certificate files (`tls`), it also listens for amqps on another free port, with
 * that certificate; it asks clients for theirs and refuses one its CA did not sign, but
 * takes a client without one.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { type ChannelModel, connect } from "amqplib";
import { freePort, waitUntil } from "./broker-ports.ts";

const exec = promisify(execFile);
const SERVER = "/usr/lib/rabbitmq/bin/rabbitmq-server";
const CTL = "/usr/lib/rabbitmq/bin/rabbitmqctl";
const EPMD = "/usr/bin/epmd";
export const rabbitmqInstalled = existsSync(SERVER) && existsSync(EPMD);

/** PEM files of the node's TLS listener: its certificate and key, and the CA of clients'. */
export interface RabbitMqTls {
  certFile: string;
  keyFile: string;
  caFile: string;
}

export interface RabbitMq {
  port: number;
  /** the amqps listener's port (null without `tls`) */
  tlsPort: number | null;
  /** the node's process group (its server script's pid): the script, its Erlang VM, helpers */
  processGroup: number;
  user: string;
  password: string;
  /** amqp://user:password@127.0.0.1:port (another password, or a path and query, if given) */
  url(options?: { password?: string; rest?: string }): string;
  /** a client connection of the test's own (closed by stop()) */
  client(): Promise<ChannelModel>;
  /** runs rabbitmqctl against the node (e.g. add_vhost, add_user, set_permissions) */
  ctl(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

/** Ends a child and its process group (the server script's Erlang VM), by its PID. */
async function stopChild(child: ChildProcess, group: boolean): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(group ? -child.pid : child.pid, "SIGTERM");
  } catch {}
  const timer = setTimeout(() => {
    try {
      process.kill(group ? -child.pid! : child.pid!, "SIGKILL");
    } catch {}
  }, 15_000);
  await exited(child);
  clearTimeout(timer);
}

export async function startRabbitMq(options: { tls?: RabbitMqTls } = {}): Promise<RabbitMq> {
  const dir = await mkdtemp(path.join(tmpdir(), "hookrelay-rabbitmq-"));
  const [port, distPort, epmdPort] = [await freePort(), await freePort(), await freePort()];
  const tlsPort = options.tls ? await freePort() : null;
  const tls = options.tls;
  const user = "hookrelay";
  const password = "rabbit-secret-1";
  await mkdir(path.join(dir, "mnesia"));
  await mkdir(path.join(dir, "log"));
  await mkdir(path.join(dir, "home"));
  const config = path.join(dir, "rabbitmq.conf");
  await writeFile(
    config,
    [
      `listeners.tcp.1 = 127.0.0.1:${port}`,
      "loopback_users = none",
      `default_user = ${user}`,
      `default_pass = ${password}`,
      // a small test node: no disk alarm on a nearly full temp disk
      "disk_free_limit.absolute = 1MB",
      ...(tls
        ? [
            `listeners.ssl.1 = 127.0.0.1:${tlsPort}`,
            `ssl_options.cacertfile = ${tls.caFile}`,
            `ssl_options.certfile = ${tls.certFile}`,
            `ssl_options.keyfile = ${tls.keyFile}`,
            // a client certificate is asked for and checked against caFile, not required
            "ssl_options.verify = verify_peer",
            "ssl_options.fail_if_no_peer_cert = false",
          ]
        : []),
      "",
    ].join("\n"),
  );
  await writeFile(path.join(dir, "enabled_plugins"), "[].\n");
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: path.join(dir, "home"),
    ERL_EPMD_PORT: String(epmdPort),
    RABBITMQ_NODENAME: `hookrelay-test-${port}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: "127.0.0.1",
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_MNESIA_BASE: path.join(dir, "mnesia"),
    RABBITMQ_LOG_BASE: path.join(dir, "log"),
    RABBITMQ_CONFIG_FILE: config,
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, "enabled_plugins"),
    // the distribution listener on loopback only
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: "-kernel inet_dist_use_interface {127,0,0,1}",
  };
  const epmd = spawn(EPMD, ["-address", "127.0.0.1", "-port", String(epmdPort)], {
    env,
    stdio: "ignore",
  });
  const out = path.join(dir, "server.out");
  let output = "";
  const server = spawn(SERVER, [], {
    env,
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    // its own process group: the Erlang VM and its helpers stop with it
    detached: true,
  });
  server.stdout?.on("data", (c: Buffer) => {
    output = (output + c.toString()).slice(-4000);
  });
  server.stderr?.on("data", (c: Buffer) => {
    output = (output + c.toString()).slice(-4000);
  });
  const clients: ChannelModel[] = [];
  const url = (o: { password?: string; rest?: string } = {}) =>
    `amqp://${user}:${encodeURIComponent(o.password ?? password)}@127.0.0.1:${port}${o.rest ?? ""}`;
  const stop = async () => {
    for (const c of clients) await c.close().catch(() => {});
    await stopChild(server, true);
    await stopChild(epmd, false);
    await writeFile(out, output).catch(() => {});
    await rm(dir, { recursive: true, force: true });
  };
  try {
    // ready when an AMQP login succeeds (the port opens a little before the node is up)
    await waitUntil(
      "rabbitmq-server",
      async () => {
        try {
          const c = await connect(url(), { timeout: 2_000 });
          await c.close();
          return true;
        } catch {
          return false;
        }
      },
      server,
      90_000,
      () => output,
    );
  } catch (err) {
    const log = await readFile(path.join(dir, "log", `${env.RABBITMQ_NODENAME}.log`), "utf8").catch(
      () => "",
    );
    await stop();
    throw new Error(`${(err as Error).message}\n${log.slice(-2000)}`);
  }
  return {
    port,
    tlsPort,
    processGroup: server.pid!,
    user,
    password,
    url,
    async client() {
      const c = await connect(url());
      c.on("error", () => {});
      clients.push(c);
      return c;
    },
    async ctl(...args) {
      const { stdout } = await exec(CTL, ["-n", env.RABBITMQ_NODENAME, ...args], {
        env,
        timeout: 60_000,
      });
      return stdout;
    },
    stop,
  };
}
