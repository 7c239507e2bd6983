#!/usr/bin/env node
// Entry for the `hookrelay` command. The source is TypeScript; tsx compiles it on load,
// so a checkout runs right after `npm ci` with no build step.
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
