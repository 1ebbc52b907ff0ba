/** The OpenAPI document's frame; the paths come from the routes' zod schemas. */
import type { FastifyDynamicSwaggerOptions } from "@fastify/swagger";

export function openApiDocumentation(): NonNullable<FastifyDynamicSwaggerOptions["openapi"]> {
  return {
    openapi: "3.0.3",
    info: {
      title: "nodefleet scaling API",
      description:
        "Creates and deletes autoscaled Kubernetes worker nodes for a Karpenter CloudProvider driver. Every error has the shape {\"error\": {\"code\", \"message\", \"details\"}}.",
      version: "1.0.0",
    },
    servers: [{ url: "http://127.0.0.1:8080" }],
    components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
    security: [{ bearer: [] }],
    tags: [
      { name: "clusters", description: "Cluster, instance types and engine runs" },
      { name: "nodes", description: "Node lifecycle (Karpenter Create/Get/List/Delete)" },
      { name: "probes", description: "Health and readiness, without a token" },
    ],
  };
}
