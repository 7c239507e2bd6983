#!/usr/bin/env -S node --max-semi-space-size=32
// Entry for the `hookrelay` command. The source is TypeScript; tsx compiles it on load,
// so a checkout runs right after `npm ci` with no build step.
//
// The flag on the first line gives V8's young generation 32 MB semi-spaces instead of 16: a
// busy worker allocates about 20 KB per delivery, much of it alive for the length of a
// request, and with the default size most of that was copied by one or two scavenges
// before it died. Measured: 4-17% less worker CPU per delivery, peak RSS unchanged
// (docs/performance.md). `npm start` and the bench run with the same flag; if you start
// `node bin/hookrelay.js` yourself, pass it too.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
