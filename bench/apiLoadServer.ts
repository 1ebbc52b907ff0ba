/**
 * The service under test of apiLoad.bench.ts, in a process of its own (forked by the bench) so that
 * autocannon's own work does not run on the service's event loop. IPC messages: `{ open:
 * batchIdleMs, logged?, withoutStore?, fronted? }` starts a fresh service on 127.0.0.1 port 0 (answers
 * `{ port }`), `{ floor: true }` empty Fastify routes instead, `{ close: true }` stops it (answers
 * `{ commits, checkpoints }`), `{ cpu: true }` answers `{ cpuMs }` (user and system). `--cpu-prof`
 * is passed on from the bench's command line. What `logged`, `withoutStore` and the floor stand
 * for: bench/README.md.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { parseFleetSpec } from "../components/fleet/fleetSpec";
import { buildServer } from "../automation/api/server";
import { buildClusterFront } from "../automation/api/clusterFront";
import { strictJsonBodies } from "../automation/api/jsonBodyParser";
import type { Db } from "../automation/store/database";
import { serviceLogger } from "../automation/cli/serviceLogger";
import { ServiceMetrics } from "../automation/api/serviceMetrics";
import { configValues } from "../automation/stackConfigFile";
import { FakeStackEngine } from "../test/support/fakeStackEngine";
import { TOKENS, tempDataDir } from "../test/support/apiHarness";
import { benchConfig } from "./benchSetup";
import { MemoryClaimStore } from "./memoryClaimStore";

export type ServerRequest =
  | { readonly open: number; readonly logged?: boolean; readonly withoutStore?: boolean; readonly fronted?: boolean }
  | { readonly floor: true }
  | { readonly close: true }
  | { readonly cpu: true };
export type ServerAnswer =
  | { readonly port: number }
  | { readonly commits: number | undefined; readonly checkpoints: number | undefined }
  | { readonly cpuMs: number };

const config = benchConfig();
const fleet = parseFleetSpec(configValues(config));
let app: FastifyInstance | undefined;
/** With `fronted`: the front of a service with several stacks, listening in the service's stead. */
let front: FastifyInstance | undefined;
let dataDir: string | undefined;

async function open(batchIdleMs: number, logged: boolean, withoutStore: boolean, fronted: boolean): Promise<ServerAnswer> {
  dataDir = tempDataDir("nodefleet-bench-load-");
  app = await buildServer({
    dataDir,
    engine: new FakeStackEngine(),
    fleet: () => fleet,
    stackConfig: () => config,
    tokens: TOKENS,
    rateLimitPerMinute: false,
    logger: logged ? serviceLogger({ NODEFLEET_LOG_LEVEL: "info" }, join(dataDir, "service.log")) : false,
    // One registry of process metrics per fresh service would pile up across rounds.
    metrics: new ServiceMetrics({ defaultMetrics: false }),
    batch: { idleMs: batchIdleMs, maxMs: batchIdleMs },
    ...(withoutStore ? { claimStore: (database: Db) => new MemoryClaimStore(database) } : {}),
  });
  const served = app;
  if (fronted) {
    await served.ready();
    const cluster = {
      stack: "bench",
      clusterId: fleet.cluster.id,
      phase: "serving",
      app: served,
      readiness: served.nodefleet.readiness,
    } as const;
    front = await buildClusterFront({ clusters: () => [cluster], metrics: new ServiceMetrics({ defaultMetrics: false }) });
  }
  const listening = front ?? served;
  await listening.listen({ host: "127.0.0.1", port: 0 });
  const address = listening.server.address();
  return { port: typeof address === "object" && address ? address.port : 0 };
}

async function floor(): Promise<ServerAnswer> {
  app = Fastify({ logger: false });
  // As the service does: the loop's DELETEs carry Content-Type: application/json and no body.
  strictJsonBodies(app);
  app.post("/floor", async (_request, reply) => reply.code(201).send({}));
  // The loop's requests, answered with nothing behind them: a created node's ID (the loop deletes it next), then 202.
  let created = 0;
  app.post("/api/v1/clusters/:clusterId/nodes", async (_request, reply) =>
    reply.code(201).send({ node: { nodeID: `floor-${(created += 1)}` } }),
  );
  app.delete("/api/v1/clusters/:clusterId/nodes/:nodeId", async (_request, reply) => reply.code(202).send({}));
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  return { port: typeof address === "object" && address ? address.port : 0 };
}

async function close(): Promise<ServerAnswer> {
  // Before group commit there is no counter (and before checkpoints off the event loop, none of those); the floor has no store.
  const stats = (app?.nodefleet?.store as { commitStats?: { groups: number; checkpoints?: number } } | undefined)?.commitStats;
  await front?.close();
  front = undefined;
  await app?.close();
  app = undefined;
  // A fresh service per round: its data directory goes with it.
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  dataDir = undefined;
  return { commits: stats?.groups, checkpoints: stats?.checkpoints };
}

function cpu(): Promise<ServerAnswer> {
  const { user, system } = process.cpuUsage();
  return Promise.resolve({ cpuMs: (user + system) / 1000 });
}

process.on("message", (request: ServerRequest) => {
  ("open" in request
    ? open(request.open, request.logged === true, request.withoutStore === true, request.fronted === true)
    : "floor" in request
      ? floor()
      : "cpu" in request
        ? cpu()
        : close()
  ).then(
    (answer) => process.send!(answer),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
      process.exit(1);
    },
  );
});
// The bench went away: so does the service, and its data directory.
process.on("disconnect", () => {
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
});
