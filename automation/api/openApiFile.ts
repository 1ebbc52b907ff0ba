/**
 * Generates the OpenAPI document from the routes' zod schemas and keeps the committed
 * `openapi.json` (input of the Go driver's client generator) in step:
 *   node dist/automation/api/openApiFile.js          writes openapi.json
 *   node dist/automation/api/openApiFile.js --check  exits 1 when it is stale
 */
import * as fs from "node:fs";
import * as path from "node:path";
import Fastify from "fastify";
import { projectRoot } from "../stackConfigFile";
import { TokenVerifier } from "./apiTokens";
import { registerRoutes } from "./server";
import { ServiceMetrics } from "./serviceMetrics";

export async function generateOpenApiDocument(): Promise<unknown> {
  const app = Fastify({ logger: false });
  await registerRoutes(app, {
    clusters: new Map(),
    metrics: new ServiceMetrics({ defaultMetrics: false }),
    readiness: () => ({ status: "ready" }),
    tokens: new TokenVerifier([]),
    rateLimitPerMinute: false,
    unauthenticatedPerMinute: 60,
  });
  await app.ready();
  const document = app.swagger();
  await app.close();
  return document;
}

export function openApiText(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

export function committedOpenApiPath(root: string = projectRoot()): string {
  return path.join(root, "openapi.json");
}

async function main(argv: string[]): Promise<void> {
  const text = openApiText(await generateOpenApiDocument());
  const file = committedOpenApiPath();
  if (argv.includes("--check")) {
    const current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
    if (current !== text) {
      process.stderr.write(`${file} is stale: run node dist/automation/api/openApiFile.js\n`);
      process.exitCode = 1;
    }
    return;
  }
  fs.writeFileSync(file, text);
  process.stderr.write(`wrote ${file}\n`);
}

if (require.main === module) void main(process.argv.slice(2));
