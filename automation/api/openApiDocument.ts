/** The OpenAPI document's frame; the paths and component schemas come from the routes' zod schemas. */
import type { FastifyDynamicSwaggerOptions, SwaggerTransformObject } from "@fastify/swagger";
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from "fastify-type-provider-zod";

const zodToJsonConfig = { target: "openapi-3.0" } as const;

/** Route schemas to OpenAPI 3.0, named schemas as `$ref`s to their components. */
export const openApiTransform: FastifyDynamicSwaggerOptions["transform"] = createJsonSchemaTransform({ zodToJsonConfig });

const componentsOf = createJsonSchemaTransformObject({ zodToJsonConfig });
const REF = /"#\/components\/schemas\/([^"]+)"/g;

/**
 * The named schemas as components, keeping only those the document refers to: the generator emits
 * an input and an output variant of each (`NodeInput`, `Node`), and a client generated from the
 * document should only get the types the routes use.
 */
export const openApiComponents: SwaggerTransformObject = (input) => {
  const document = componentsOf(input) as { components?: { schemas?: Record<string, unknown> } };
  const schemas = document.components?.schemas ?? {};
  const used = new Set<string>();
  const visit = (value: unknown) => {
    for (const [, name] of JSON.stringify(value).matchAll(REF)) {
      if (!used.has(name!)) {
        used.add(name!);
        visit(schemas[name!]);
      }
    }
  };
  visit({ ...document, components: { ...document.components, schemas: {} } });
  return {
    ...document,
    components: { ...document.components, schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name))) },
  } as ReturnType<SwaggerTransformObject>;
};

export function openApiDocumentation(): NonNullable<FastifyDynamicSwaggerOptions["openapi"]> {
  return {
    openapi: "3.0.3",
    info: {
      title: "nodefleet scaling API",
      description:
        'Creates and deletes autoscaled Kubernetes worker nodes for a Karpenter CloudProvider driver. Every error has the shape {"error": {"code", "message", "details"}}.',
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
