/** Liveness and readiness probes; no token needed. */
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { healthSchema, readinessSchema } from "../schemas";

export interface Readiness {
  readonly status: "ready" | "starting" | "degraded" | "stopping";
  readonly details?: Record<string, unknown>;
}

export const probeRoutes: FastifyPluginAsyncZod<{ readiness: () => Readiness }> = async (app, { readiness }) => {
  app.get(
    "/healthz",
    {
      schema: { operationId: "getHealth", tags: ["probes"], summary: "The process is up", response: { 200: healthSchema } },
      logLevel: "warn",
    },
    async () => ({ status: "ok" as const }),
  );
  app.get(
    "/readyz",
    {
      schema: {
        operationId: "getReadiness",
        tags: ["probes"],
        summary:
          "200 once the store is open and the engine can run (degraded is still ready: deletes must keep working); 503 while starting or stopping",
        response: { 200: readinessSchema, 503: readinessSchema },
      },
      logLevel: "warn",
    },
    async (_request, reply) => {
      const state = readiness();
      return reply.code(state.status === "starting" || state.status === "stopping" ? 503 : 200).send(state);
    },
  );
};
