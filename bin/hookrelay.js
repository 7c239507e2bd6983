#!/usr/bin/env node
// Entry for the `hookrelay` command. The source is TypeScript; tsx compiles it on load,
// so a checkout runs right after `npm ci` with no build step.
//
// Run it with `--max-semi-space-size=32` (`npm start` does; elsewhere set
// NODE_OPTIONS=--max-semi-space-size=32): V8's young generation then has 32 MB semi-spaces
// instead of 16. A busy worker allocates about 20 KB per delivery, much of it alive for the
// length of a request, and with the default size most of that was copied by one or two
// scavenges before it died. Measured: 4-17% less worker CPU per delivery, peak RSS
// unchanged (docs/performance.md). The flag is not on the line above because
// `env -S` is missing from some systems (BusyBox).
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
