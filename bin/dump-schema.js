#!/usr/bin/env node
// Regenerates test/schema.sql from a freshly migrated throwaway embedded database.
import { register } from "tsx/esm/api";

register();
const { dumpSchema } = await import("../test/helpers/dump-schema.ts");
await dumpSchema();
