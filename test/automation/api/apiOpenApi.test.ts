/** The committed openapi.json is what the zod schemas generate (fails when stale), and it describes every route. */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { committedOpenApiPath, generateOpenApiDocument, openApiText } from "../../../automation/api/openApiFile";

describe("OpenAPI document", () => {
  it("is committed and up to date (regenerate with node dist/automation/api/openApiFile.js)", async () => {
    const generated = openApiText(await generateOpenApiDocument());
    assert.ok(fs.existsSync(committedOpenApiPath()), "openapi.json is missing at the repository root");
    assert.equal(fs.readFileSync(committedOpenApiPath(), "utf8"), generated, "openapi.json is stale");
  });

  it("describes every route with its documented error codes and the bearer scheme", async () => {
    const doc = (await generateOpenApiDocument()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown>; security?: unknown }>>;
      components: { securitySchemes: Record<string, unknown> };
    };
    const paths = doc.paths;
    const create = paths["/api/v1/clusters/{clusterId}/nodes"]!.post!;
    for (const code of ["200", "201", "400", "401", "403", "404", "409", "413", "422", "429"]) assert.ok(create.responses[code], `POST nodes ${code}`);
    assert.ok(paths["/api/v1/clusters/{clusterId}/nodes"]!.get);
    assert.ok(paths["/api/v1/clusters/{clusterId}/nodes/{nodeId}"]!.get!.responses["404"]);
    assert.ok(paths["/api/v1/clusters/{clusterId}/nodes/{nodeId}"]!.delete!.responses["202"]);
    assert.ok(paths["/api/v1/clusters/{clusterId}"]!.get);
    assert.ok(paths["/api/v1/clusters/{clusterId}/instance-types"]!.get);
    assert.ok(paths["/api/v1/clusters/{clusterId}/operations"]!.get);
    assert.ok(paths["/healthz"] && paths["/readyz"]);
    assert.ok(doc.components.securitySchemes.bearer);
    assert.ok(JSON.stringify(create).includes("uniqueID"));
  });

  it("names every route by a stable operationId (the Go driver's client methods)", async () => {
    const doc = (await generateOpenApiDocument()) as { paths: Record<string, Record<string, { operationId?: string }>> };
    const ids = Object.entries(doc.paths).flatMap(([url, methods]) => Object.entries(methods).map(([method, op]) => [`${method.toUpperCase()} ${url}`, op.operationId]));
    assert.deepEqual(Object.fromEntries(ids), {
      "GET /healthz": "getHealth",
      "GET /readyz": "getReadiness",
      "GET /api/v1/clusters/{clusterId}": "getCluster",
      "GET /api/v1/clusters/{clusterId}/instance-types": "listInstanceTypes",
      "GET /api/v1/clusters/{clusterId}/operations": "listOperations",
      "POST /api/v1/clusters/{clusterId}/nodes": "createNode",
      "GET /api/v1/clusters/{clusterId}/nodes": "listNodes",
      "GET /api/v1/clusters/{clusterId}/nodes/{nodeId}": "getNode",
      "DELETE /api/v1/clusters/{clusterId}/nodes/{nodeId}": "deleteNode",
    });
  });
});
