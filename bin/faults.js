#!/usr/bin/env node
// Entry for `npm run faults`. The suite is TypeScript; tsx compiles it on load (see faults/main.ts).
// `--scenario failover` runs the Patroni failover scenario (faults/failover.ts), `--scenario
// ordered` the ordering check at full size (faults/ordered.ts), instead of the
// default `restart` suite; every other option goes to the scenario.
import { register } from "tsx/esm/api";

const SCENARIOS = {
  restart: "../faults/main.ts",
  failover: "../faults/failover.ts",
  ordered: "../faults/ordered.ts",
};
const at = process.argv.findIndex((a) => a === "--scenario" || a.startsWith("--scenario="));
let scenario = "restart";
if (at >= 0) {
  const arg = process.argv[at];
  const inline = arg.includes("=");
  scenario = inline ? arg.slice(arg.indexOf("=") + 1) : (process.argv[at + 1] ?? "");
  process.argv.splice(at, inline ? 1 : 2);
}
if (!Object.hasOwn(SCENARIOS, scenario)) {
  process.stderr.write(`--scenario is ${Object.keys(SCENARIOS).join(" or ")}, not ${scenario}\n`);
  process.exit(2);
}
register();
await import(SCENARIOS[scenario]);
