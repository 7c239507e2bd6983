#!/usr/bin/env node
// Entry for `npm run faults`. The suite is TypeScript; tsx compiles it on load (see faults/main.ts).
import { register } from "tsx/esm/api";

register();
await import("../faults/main.ts");
