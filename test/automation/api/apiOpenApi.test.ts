/** The committed openapi.json is what the zod schemas generate (fails when stale), and it describes every route. */
import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import { ERROR_CODES } from "../../../automation/api/apiError";
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
    for (const code of ["200", "201", "400", "401", "403", "404", "409", "413", "422", "429"])
      assert.ok(create.responses[code], `POST nodes ${code}`);
    assert.ok(paths["/api/v1/clusters/{clusterId}/nodes"]!.get);
    assert.ok(paths["/api/v1/clusters/{clusterId}/nodes/{nodeId}"]!.get!.responses["404"]);
    assert.ok(paths["/api/v1/clusters/{clusterId}/nodes/{nodeId}"]!.delete!.responses["202"]);
    assert.ok(paths["/api/v1/clusters/{clusterId}"]!.get);
    assert.ok(paths["/api/v1/clusters/{clusterId}/instance-types"]!.get);
    assert.ok(paths["/api/v1/clusters/{clusterId}/operations"]!.get);
    assert.ok(paths["/healthz"] && paths["/readyz"]);
    assert.ok(doc.components.securitySchemes.bearer);
    assert.ok(JSON.stringify(create).includes("uniqueID"));
    // What any /api/v1 route can answer besides its own codes: an overlong path parameter (the router), shutdown or a store that cannot write.
    for (const [route, operations] of Object.entries(paths).filter(([route]) => route.startsWith("/api/v1/"))) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const code of ["414", "503"]) assert.ok(operation.responses[code], `${method.toUpperCase()} ${route} documents ${code}`);
      }
    }
  });

  it("names every route by a stable operationId (the Go driver's client methods)", async () => {
    const doc = (await generateOpenApiDocument()) as { paths: Record<string, Record<string, { operationId?: string }>> };
    const ids = Object.entries(doc.paths).flatMap(([url, methods]) =>
      Object.entries(methods).map(([method, op]) => [`${method.toUpperCase()} ${url}`, op.operationId]),
    );
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

  it("names the schemas a client generator turns into types, and refers to them from the routes", async () => {
    const doc = (await generateOpenApiDocument()) as {
      paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, { enum?: string[]; properties?: Record<string, unknown> }> };
    };
    const schemas = doc.components.schemas;
    for (const name of [
      "Node",
      "NodeList",
      "CreateNodeRequestInput",
      "RequirementInput",
      "Taint",
      "ResourceList",
      "InstanceType",
      "InstanceTypeList",
      "Offering",
      "Cluster",
      "Pool",
      "DeleteNodeResponse",
      "Error",
      "ErrorCode",
      "OperationList",
    ]) {
      assert.ok(schemas[name], `component schema ${name}`);
    }
    const ref = (value: unknown) => JSON.stringify(value).match(/#\/components\/schemas\/(\w+)/)?.[1];
    const nodes = doc.paths["/api/v1/clusters/{clusterId}/nodes"]!;
    assert.equal(ref(nodes.post!.requestBody), "CreateNodeRequestInput");
    assert.equal(ref(nodes.post!.responses["201"]), "Node");
    assert.equal(ref(nodes.post!.responses["409"]), "Error");
    assert.equal(ref(nodes.get!.responses["200"]), "NodeList");
    assert.equal(ref(doc.paths["/api/v1/clusters/{clusterId}/instance-types"]!.get!.responses["200"]), "InstanceTypeList");
    assert.deepEqual(schemas.ErrorCode!.enum, Object.keys(ERROR_CODES), "the error codes are an enum the driver can switch on");
    for (const field of ["failureCode", "imageID", "driftReason", "driftDetails"])
      assert.ok(schemas.Node!.properties![field], `Node.${field}`);
    const unused = Object.keys(schemas).filter(
      (name) =>
        !JSON.stringify({
          ...doc,
          components: { schemas: Object.fromEntries(Object.entries(schemas).filter(([n]) => n !== name)) },
        }).includes(`"#/components/schemas/${name}"`),
    );
    assert.deepEqual(unused, [], "every component schema is used");
  });
});
