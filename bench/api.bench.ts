/**
 * Scaling API benchmark on loopback with the simulated engine (not part of the test command):
 *   npm run build && node dist/bench/api.bench.js [--engine simulated|fake] [--duration 10] [--connections 50]
 * 1. A burst of 200 creates (100 NodeClaims, each sent twice as Karpenter retries; the bench stack
 *    is the example stack's autoscaled pool alone, maxNodes 100, a Hetzner network's most):
 *    per-request latency, engine runs, and the time until all are RUNNING.
 * 2. autocannon GET (node by id) and POST (idempotent create replay) under concurrent load:
 *    p50/p99 latency and requests per second. Prints one JSON document on stdout; progress on stderr.
 */
import * as os from "node:os";
import autocannon from "autocannon";
import { parseFleetSpec } from "../components/fleet/fleetSpec";
import { buildServer } from "../automation/api/server";
import { NodefleetClient } from "../automation/client/nodefleetClient";
import type { StackEngine } from "../automation/engine/stackEngine";
import { gitStackProgram } from "../automation/gitStackProgram";
import { SimulatedEngine } from "../automation/simulated/simulatedEngine";
import { configValues } from "../automation/stackConfigFile";
import { FakeStackEngine } from "../test/support/fakeStackEngine";
import { TOKEN, TOKENS, tempDataDir } from "../test/support/apiHarness";
import { arg, benchConfig, percentile } from "./benchSetup";

async function main(): Promise<void> {
  const engineKind = arg("engine", "simulated");
  const duration = Number(arg("duration", "10"));
  const connections = Number(arg("connections", "50"));
  const dataDir = tempDataDir("nodefleet-bench-");
  const config = benchConfig();
  let engine: StackEngine;
  let engineReady: Promise<unknown> | undefined;
  if (engineKind === "simulated") {
    const simulated = new SimulatedEngine({ dataDir, banner: false });
    engine = simulated;
    engineReady = simulated.up({ stackName: "example", program: gitStackProgram({ allowMissingKubeconfig: true }), config });
  } else {
    const fake = new FakeStackEngine();
    fake.delayMs = 1500;
    engine = fake;
  }
  const app = await buildServer({
    dataDir,
    engine,
    fleet: () => parseFleetSpec(configValues(config)),
    stackConfig: () => config,
    tokens: TOKENS,
    rateLimitPerMinute: false,
    logger: false,
    ...(engineReady ? { engineReady } : {}),
  });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  const client = new NodefleetClient({ baseUrl, clusterId: "example", token: TOKEN });
  if (engineReady) {
    process.stderr.write("applying the git stack to the simulated cloud...\n");
    await engineReady;
  }

  // 1. Burst of 200 creates.
  const names = Array.from({ length: 100 }, (_, i) => `bench-${i}`);
  const burst = [...names, ...names];
  const latencies: number[] = [];
  const started = performance.now();
  const answers = await Promise.all(
    burst.map(async (uniqueID) => {
      const t = performance.now();
      const answer = await client.createNode({ uniqueID, pool: "hel1-burst" });
      latencies.push(performance.now() - t);
      return answer;
    }),
  );
  const acceptedMs = performance.now() - started;
  const nodeIds = [...new Set(answers.map((a) => a.node.nodeID))];
  process.stderr.write(`burst accepted in ${acceptedMs.toFixed(0)} ms; waiting until ${nodeIds.length} nodes are RUNNING...\n`);
  for (;;) {
    const nodes = await client.listNodes();
    const running = nodes.filter((n) => n.status === "RUNNING").length;
    const failed = nodes.filter((n) => n.status === "FAILED").length;
    if (running + failed >= nodeIds.length) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const allRunningMs = performance.now() - started;
  const runs = (await client.operations()).filter((o) => o.kind === "up");
  latencies.sort((a, b) => a - b);

  // 2. Load: GET a node by id, and POST an idempotent create replay.
  const cannon = async (title: string, options: autocannon.Options) => {
    process.stderr.write(`autocannon ${title} (${duration}s, ${connections} connections)...\n`);
    const result = await autocannon({ ...options, duration, connections });
    return {
      requestsPerSecond: result.requests.average,
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
      non2xx: result.non2xx,
      errors: result.errors,
      total: result.requests.total,
    };
  };
  const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
  const get = await cannon("GET node", { url: `${baseUrl}/api/v1/clusters/example/nodes/${nodeIds[0]}`, headers });
  const list = await cannon("GET nodes (100)", { url: `${baseUrl}/api/v1/clusters/example/nodes`, headers });
  const post = await cannon("POST create replay", {
    url: `${baseUrl}/api/v1/clusters/example/nodes`,
    method: "POST",
    headers,
    body: JSON.stringify({ uniqueID: names[0], pool: "hel1-burst" }),
  });
  await app.close();
  const report = {
    engine: engineKind,
    machine: { cpus: os.cpus().length, node: process.version },
    burst: {
      requests: burst.length,
      distinctNodes: nodeIds.length,
      created201: answers.filter((a) => a.created).length,
      acceptLatencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99), max: latencies.at(-1) },
      allAcceptedMs: Math.round(acceptedMs),
      allRunningMs: Math.round(allRunningMs),
      engineRuns: runs.length,
      runs: runs.reverse().map((r) => ({ nodes: r.nodes.length, result: r.result, summary: r.summary })),
    },
    load: { getNode: get, listNodes: list, postReplay: post },
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
