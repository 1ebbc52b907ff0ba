/**
 * Starts the scaling API in-process on 127.0.0.1, port 0, with a temp data directory, the example
 * stack's config (mutable, for drift tests) and the in-memory fake engine unless told otherwise.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { FastifyInstance } from "fastify";
import { parseFleetSpec, type FleetSpec } from "../../components/fleet/fleetSpec";
import { buildServer, type BuildServerOptions } from "../../automation/api/server";
import { ServiceMetrics } from "../../automation/api/serviceMetrics";
import { NodefleetApiError, NodefleetClient } from "../../automation/client/nodefleetClient";
import type { StackConfigValue, StackEngine } from "../../automation/engine/stackEngine";
import { configValues, projectRoot, readStackConfigFile } from "../../automation/stackConfigFile";
import { FakeStackEngine } from "./fakeStackEngine";
import { until } from "./until";

export const TOKEN = "example-token-0123456789abcdef";
export const ROTATED_TOKEN = "example-token-rotated-0123456789";
export const OTHER_CLUSTER_TOKEN = "other-cluster-token-0123456789ab";
export const TOKENS = `example:${TOKEN},example:${ROTATED_TOKEN},other:${OTHER_CLUSTER_TOKEN}`;

export interface TestApi {
  readonly app: FastifyInstance;
  readonly baseUrl: string;
  readonly client: NodefleetClient;
  readonly engine: StackEngine;
  readonly dataDir: string;
  /** The stack config the service reads; edit it to simulate a change in git. */
  readonly config: Record<string, StackConfigValue>;
  clientWith(token: string | undefined, clusterId?: string): NodefleetClient;
  close(): Promise<void>;
}

/** Directories made by tempDataDir in this process: removed when it exits (CI machines run the suite again and again). */
const tempDirs: string[] = [];
process.once("exit", () => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
});

/** A fresh directory under the OS temp directory, removed when the process exits. */
export function tempDataDir(prefix = "nodefleet-api-"): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export function exampleConfig(): Record<string, StackConfigValue> {
  return structuredClone(readStackConfigFile("example", projectRoot()).config);
}

/** The fleet spec of `config`, parsed again only after an edit (as the served stack file is re-read when it changes). */
function fleetOf(config: Record<string, StackConfigValue>): () => FleetSpec {
  let seen: { readonly text: string; readonly spec: FleetSpec } | undefined;
  return () => {
    const text = JSON.stringify(config);
    if (seen?.text !== text) seen = { text, spec: parseFleetSpec(configValues(config)) };
    return seen.spec;
  };
}

export async function startTestApi(
  options: Partial<BuildServerOptions> & { engine?: StackEngine; dataDir?: string; config?: Record<string, StackConfigValue> } = {},
): Promise<TestApi> {
  const engine = options.engine ?? new FakeStackEngine();
  const dataDir = options.dataDir ?? tempDataDir();
  const config = options.config ?? exampleConfig();
  const app = await buildServer({
    tokens: TOKENS,
    batch: { idleMs: 50, maxMs: 300 },
    retry: { initialMs: 50, maxMs: 500 },
    logger: false,
    // prom-client's process collectors once per server would pile up across a test run.
    metrics: new ServiceMetrics({ defaultMetrics: false }),
    ...options,
    engine,
    dataDir,
    fleet: fleetOf(config),
    stackConfig: () => config,
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const baseUrl = `http://127.0.0.1:${port}`;
  const clientWith = (token: string | undefined, clusterId = "example") =>
    new NodefleetClient({ baseUrl, clusterId, ...(token !== undefined ? { token } : {}) });
  return {
    app,
    baseUrl,
    client: clientWith(TOKEN),
    engine,
    dataDir,
    config,
    clientWith,
    close: () => app.close(),
  };
}

/** Polls until `check` returns a value (not undefined), about `attempts` times `intervalMs` at most. */
export function eventually<T>(check: () => Promise<T | undefined> | T | undefined, attempts = 200, intervalMs = 50): Promise<T> {
  return until("the condition", check, attempts * intervalMs, () => "", intervalMs);
}

/** The API error a client call fails with (fails the test when the call succeeds or fails otherwise). */
export async function apiError(promise: Promise<unknown>): Promise<NodefleetApiError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof NodefleetApiError) return error;
    throw error;
  }
  throw new Error("expected an API error");
}
