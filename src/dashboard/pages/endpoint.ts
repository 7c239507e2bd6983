import type { FastifyInstance } from "fastify";
import type { DashboardDeps } from "../plugin.ts";

export function registerEndpointPages(_app: FastifyInstance, _deps: DashboardDeps): void {}
