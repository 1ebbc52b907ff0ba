/**
 * How fast a `POST /nodes` becomes a machine, on the real engine (`nodefleet serve --stack local
 * --engine automation` on the local cloud) and on the simulated engine, in one run: for 1, 40 and
 * again 1 concurrent creates, seconds to the server's create, to RUNNING in the API and (real
 * engine) to the Node Ready, and the Hetzner API requests per created node. `--boot-delay-ms N`
 * makes the fake's servers take N ms to running; `--without-checkpoints` adds a real round with
 * upstream's PULUMI_SKIP_CHECKPOINTS. Targets, and what each figure means: bench/README.md.
 */
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type LocalCloud, startLocalCloud } from "../automation/local/localCloud";
import type { OperationView } from "../automation/client/nodefleetClient";
import { SimulatedCloud } from "../automation/simulated/simulatedCloud";
import { stackCheckpointFiles } from "../automation/engine/fileBackendState";
import { apiStackName } from "../automation/reconciler/apiStack";
import { TOKEN } from "../test/support/apiHarness";
import { UP, editLocalPools, isReady, poolNodes } from "../test/support/localFleet";
import { runPulumi } from "../automation/local/localStack";
import { localStackProject } from "../test/support/localStackProject";
import { until } from "../test/support/until";
import { type ServeProcess, startServe } from "../test/support/serveProcess";
import { arg, percentile } from "./benchSetup";

const POOL = "local-burst";
const BATCH = { NODEFLEET_BATCH_IDLE_MS: "300", NODEFLEET_BATCH_MAX_MS: "3000" };
/**
 * Concurrent creates per round: the service's first run after its start (workspace, plugins and
 * caches cold), 40 at once, then 1 again on a service that has run before (the steady state).
 */
const ROUNDS = [1, 40, 1];
const BOOT_DELAY_MS = arg("boot-delay-ms", "0");
const WITHOUT_CHECKPOINTS = process.argv.includes("--without-checkpoints");
const roundTitle = (round: number, count: number) =>
  `${count} creates${count === 1 ? (round === 0 ? " (first run after start)" : " (after earlier runs)") : ""}`;

interface Timings {
  serverCreated: number[];
  running: number[];
  nodeReady: number[];
  /** What `requests()` counted from the creates until the last milestone. */
  requests: number;
  /** What `peak()` said once every node had every milestone. */
  peak?: string;
}

const summary = (values: number[]) =>
  values.length ? `p50 ${percentile(values, 50).toFixed(2)} s, max ${Math.max(...values).toFixed(2)} s` : "n/a";

/** Polls every 50 ms until every node has each milestone; `serverOf` says whether a node's server exists yet. */
async function measure(
  serve: ServeProcess,
  count: number,
  round: string,
  serverOf: (nodeId: string) => boolean,
  nodeReady?: () => Promise<ReadonlySet<string>>,
  requests: () => number = () => 0,
  peak?: () => string,
): Promise<Timings> {
  const requestsBefore = requests();
  const started = performance.now();
  const answers = await Promise.all(
    Array.from({ length: count }, (_, i) => serve.client.createNode({ uniqueID: `${round}-${i}`, pool: POOL, instanceType: "cpx31" })),
  );
  const pending = new Map(answers.map((a) => [a.node.nodeID, a.node.providerID]));
  const timings: Timings = { serverCreated: [], running: [], nodeReady: [], requests: 0 };
  const created = new Set<string>();
  const running = new Set<string>();
  const ready = new Set<string>();
  await until(
    `${count} nodes through every milestone`,
    async () => {
      const seconds = (performance.now() - started) / 1000;
      const listed = await serve.client.listNodes();
      const readyNow = nodeReady ? await nodeReady() : new Set<string>();
      for (const [nodeId, providerID] of pending) {
        if (!created.has(nodeId) && serverOf(nodeId)) {
          created.add(nodeId);
          timings.serverCreated.push(seconds);
        }
        if (!running.has(nodeId) && listed.some((n) => n.nodeID === nodeId && n.status === "RUNNING")) {
          running.add(nodeId);
          timings.running.push(seconds);
        }
        if (nodeReady && !ready.has(nodeId) && readyNow.has(providerID)) {
          ready.add(nodeId);
          timings.nodeReady.push(seconds);
        }
      }
      return created.size === count && running.size === count && (!nodeReady || ready.size === count) ? true : undefined;
    },
    900_000,
    () => serve.stderr().slice(-2000),
    50,
  );
  timings.requests = requests() - requestsBefore;
  timings.peak = peak?.();
  await Promise.all([...pending.keys()].map((id) => serve.client.deleteNode(id)));
  await until("the round's nodes deleted", async () => ((await serve.client.listNodes()).length === 0 ? true : undefined), 900_000);
  return timings;
}

/** Ready, and its catalog read from the fake (readiness does not wait for that; it names a stale catalog): rounds start alike. */
const ready = (serve: ServeProcess) =>
  until(
    "the service ready with a fresh catalog",
    async () => {
      const { body } = await serve.client.readiness();
      return body.status === "ready" && body.details?.catalog === undefined ? true : undefined;
    },
    180_000,
    () => serve.stderr().slice(-2000),
    100,
  );

/** Each engine run of a round, in order: its kind, the nodes it acted on and its duration (where the time to a server goes). */
function engineRuns(runs: readonly OperationView[]): string {
  const seconds = (r: OperationView) => (r.finishedAt ? ((Date.parse(r.finishedAt) - Date.parse(r.startedAt)) / 1000).toFixed(2) : "?");
  return [...runs]
    .sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt))
    .map((r) => `${r.kind} (${r.nodes.length} nodes) ${seconds(r)} s`)
    .join(", ");
}

/** Bytes of the API stack's checkpoint in the service's data directory (0 before its first run). */
function apiStackStateBytes(dataDir: string): number {
  const [file] = stackCheckpointFiles(join(dataDir, "state"), apiStackName("local"));
  return file ? statSync(file).size : 0;
}

const totalRequests = (cloud: LocalCloud) => [...cloud.hcloud.requestCounts.values()].reduce((a, b) => a + b, 0);

async function main(): Promise<void> {
  process.stdout.write(
    `machine: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; batch idle ${BATCH.NODEFLEET_BATCH_IDLE_MS} ms, max ${BATCH.NODEFLEET_BATCH_MAX_MS} ms; boot delay ${BOOT_DELAY_MS} ms; engine parallel ${process.env.NODEFLEET_ENGINE_PARALLEL ?? "default"}\n`,
  );
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-local-create-bench-"));
  const project = localStackProject(join(dir, "project"));
  const cloud = await startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 200,
    logger: { info() {}, warn() {} },
    projectDir: project,
    env: { ...process.env, NODEFLEET_SIM_BOOT_DELAY_MS: BOOT_DELAY_MS },
  });
  const servers: ServeProcess[] = [];
  const rows: string[] = [];
  try {
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    await runPulumi(UP, project, cloud.env);

    // Read in-process, not over HTTP: the fake's request counters are what the bench reports.
    const fakeServer = (nodeId: string) => cloud.hcloud.state.servers.some((s) => s.labels["nodefleet.io/node"] === nodeId);
    const nodeReady = async () => new Set((await poolNodes(cloud, POOL)).filter(isReady).map((n) => n.spec.providerID ?? ""));
    let serveDataDir = "";
    const stateSize = () => `API stack state ${Math.round(apiStackStateBytes(serveDataDir) / 1024)} KiB`;
    const realRounds = async (title: string, env: NodeJS.ProcessEnv) => {
      serveDataDir = join(dir, title.replace(/\W+/g, "-"));
      const serve = await startServe(
        serveDataDir,
        { ...cloud.env, ...BATCH, ...env, NODEFLEET_API_TOKENS: `local:${TOKEN}` },
        { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 180_000 },
      );
      servers.push(serve);
      await ready(serve);
      for (const [round, count] of ROUNDS.entries()) {
        const runsBefore = new Set((await serve.client.operations()).map((o) => o.id));
        const t = await measure(serve, count, `${servers.length}-${round}`, fakeServer, nodeReady, () => totalRequests(cloud), stateSize);
        rows.push(
          `${title}, ${roundTitle(round, count)}: server create ${summary(t.serverCreated)}; RUNNING ${summary(t.running)}; Node Ready ${summary(t.nodeReady)}; ${(t.requests / count).toFixed(1)} Hetzner requests per created node; ${t.peak}`,
        );
        rows.push(`  engine runs: ${engineRuns((await serve.client.operations()).filter((o) => !runsBefore.has(o.id)))}`);
      }
      serve.child.kill("SIGTERM");
      await serve.exited();
    };
    await realRounds("real engine", {});
    const counts = [...cloud.hcloud.requestCounts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8);
    rows.push(`  busiest Hetzner endpoints: ${counts.map(([k, v]) => `${k} ${v}`).join(", ")}`);
    if (WITHOUT_CHECKPOINTS)
      await realRounds("real engine without checkpoints", { PULUMI_EXPERIMENTAL: "true", PULUMI_SKIP_CHECKPOINTS: "true" });

    const simulatedDir = join(dir, "simulated");
    const simulated = await startServe(
      simulatedDir,
      { ...cloud.env, ...BATCH, NODEFLEET_SIM_BOOT_DELAY_MS: BOOT_DELAY_MS, NODEFLEET_API_TOKENS: `local:${TOKEN}` },
      { stack: "local", engine: "simulated", cwd: project, clusterId: "local" },
    );
    servers.push(simulated);
    await ready(simulated);
    const simulatedServer = (nodeId: string) => new SimulatedCloud(simulatedDir).listServers({ "nodefleet.io/node": nodeId }).length > 0;
    for (const [round, count] of ROUNDS.entries()) {
      const t = await measure(simulated, count, `simulated-${round}`, simulatedServer);
      rows.push(
        `simulated engine, ${roundTitle(round, count)}: server create ${summary(t.serverCreated)}; RUNNING ${summary(t.running)} (no Node: no machines)`,
      );
    }
  } finally {
    for (const serve of servers) {
      if (serve.child.exitCode === null) serve.child.kill("SIGTERM");
      await serve.exited();
    }
    await cloud.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`${rows.join("\n")}\n`);
}

void main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
