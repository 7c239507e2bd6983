import type { FastifyInstance } from "fastify";
import type { DashboardDeps } from "../plugin.ts";

export function registerDeadLetterPages(_app: FastifyInstance, _deps: DashboardDeps): void {}
