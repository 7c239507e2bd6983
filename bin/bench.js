#!/usr/bin/env node
// Entry for `npm run bench`. The bench is TypeScript; tsx compiles it on load (see bench/main.ts).
import { register } from "tsx/esm/api";

register();
await import("../bench/main.ts");
