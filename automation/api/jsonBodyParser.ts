import type { FastifyInstance } from "fastify";

/**
 * Fastify's JSON parser, except that an empty body is no body: clients that send Content-Type:
 * application/json on every request, bodyless DELETEs included (a route that needs a body still
 * answers 400 ValidationError).
 */
export function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) =>
    body === "" ? done(null, undefined) : parseJson(request, body as string, done),
  );
}
