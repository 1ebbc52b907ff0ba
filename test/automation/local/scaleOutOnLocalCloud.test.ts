/**
 * Issue 40's scale-out test on the real engine (the pulumi CLI and nodefleet's provider plugins on
 * the local cloud): two `serve` replicas, each with its own data directory, sharing a PostgreSQL
 * (claims and runs), an S3 bucket (the API stack's Pulumi state) and a Temporal development server
 * (each replica a worker; the stack's runs one workflow). Both serve the local cloud's cluster and a
 * second stack with a broken config, as replicas of one deployment would. The Karpenter-style
 * conformance drive (karpenterConformance.ts) spreads its creates over both replicas, a NodeClaim's
 * retry going to the other one; the replica found running an engine run is killed with its CLI and
 * plugins, and the other's worker finishes the run (after the activity's 30 s heartbeat timeout)
 * while it keeps answering reads and creates: every claim converges to exactly one server and one
 * Ready Node, and the fake Hetzner API holds no other server. The broken stack is reported failed
 * and stops nothing. The killed replica comes back, and deletes spread over both end in 404 with
 * nothing left.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestWorkflowEnvironment } from "@temporalio/testing";
import { parseDocument } from "yaml";
import { NodefleetApiError, NodefleetClient, type NodeView } from "../../../automation/client/nodefleetClient";
import { leftoversOfEndedEngines, stopProcesses } from "../../../automation/engine/leftoverProcesses";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { stackRunsStatus, stackRunsWorkflowId } from "../../../automation/temporal/stackRunsClient";
import { TOKEN } from "../../support/apiHarness";
import { awaitRunning, claimNames, type ConformanceClient, createClaims, deleteUntilGone } from "../../support/karpenterConformance";
import { UP, allServers, editLocalPools, isReady, poolNodes } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { type ServeProcess, crashWithChildren, startServe, stopServe } from "../../support/serveProcess";
import { startScaleOutBackends, type ScaleOutBackends } from "../../support/scaleOutBackends";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const POOL = "local-burst";
const CREATE = { pool: POOL, instanceType: "cpx21" };
const PROVIDER_IDS = "nodefleet:///local/";
const BROKEN_TOKEN = "broken-token-0123456789abcdef0";
const quiet = { info() {}, warn() {} };

interface Readiness {
  readonly status: number;
  readonly body: { status: string; details: { clusters: Record<string, { status: string; details?: Record<string, unknown> }> } };
}

async function readiness(replica: ServeProcess): Promise<Readiness> {
  const response = await fetch(`${replica.baseUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as Readiness["body"] };
}

/** Whether the replica's log since `from` shows an engine run started and not finished. */
function runUnderWay(replica: ServeProcess, from: number): boolean {
  const log = replica.stderr().slice(from);
  return log.lastIndexOf("engine run starting") > log.lastIndexOf("engine run finished");
}

/** The fake's servers by the claim (node id) their label names; a server without one counts under "". */
async function serversByClaim(cloud: LocalCloud): Promise<Map<string, number[]>> {
  const byClaim = new Map<string, number[]>();
  for (const server of await allServers(cloud)) {
    const node = server.labels["nodefleet.io/node"] ?? "";
    byClaim.set(node, [...(byClaim.get(node) ?? []), server.id]);
  }
  return byClaim;
}

describe("scale-out on the local cloud: two replicas, PostgreSQL, S3 state and Temporal (real engine)", function () {
  this.timeout(900_000);
  let dir: string;
  let project: string;
  let cloud: LocalCloud | undefined;
  /** PostgreSQL, the S3 bucket of the API stacks' state and Temporal, shared by the replicas. */
  let backends: ScaleOutBackends | undefined;
  let temporal: TestWorkflowEnvironment | undefined;
  /** While set, the fake Hetzner API holds server creates until it resolves: a run then outlasts a cancel's way to it. */
  let createsHeld: Promise<void> | undefined;
  let heldCreates = 0;
  /** The replicas by name; `live` those not killed. */
  const replicas = new Map<string, ServeProcess>();
  let live: string[] = [];
  const created: string[] = [];

  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, intervalMs = 500) =>
    until(what, probe, 600_000, () => [...replicas].map(([name, r]) => `${name} said:\n${r.stderr().slice(-2000)}`).join("\n"), intervalMs);
  const karpenterPace = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 1000);

  /**
   * The drive's client over the live replicas: a NodeClaim's first Create goes to one replica and its
   * retry to the next, and reads and deletes take turns.
   */
  let turn = 0;
  const sent = new Map<string, number>();
  const next = () => replicas.get(live[turn++ % live.length]!)!.client;
  const spread: ConformanceClient = {
    createNode: (body, options) => {
      const first = sent.get(body.uniqueID) ?? turn++;
      sent.set(body.uniqueID, first + 1);
      return replicas.get(live[first % live.length]!)!.client.createNode(body, options);
    },
    getNode: (id) => next().getNode(id),
    listNodes: (pool) => next().listNodes(pool),
    deleteNode: (id) => next().deleteNode(id),
  };

  /** `serve --stack local --stack broken` on the local cloud's project, in Temporal's scale-out mode, once cluster local is ready. */
  async function startReplica(name: string): Promise<ServeProcess> {
    const replica = await startServe(
      join(dir, name),
      {
        ...cloud!.env,
        NODEFLEET_API_TOKENS: `local:${TOKEN},broken:${BROKEN_TOKEN}`,
        ...backends!.env,
        NODEFLEET_LOG_LEVEL: "info",
        NODEFLEET_BATCH_IDLE_MS: "300",
      },
      { stacks: ["local", "broken"], engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 180_000 },
    );
    replicas.set(name, replica);
    await until(
      `replica ${name} serving cluster local`,
      async () => ((await readiness(replica)).body.details.clusters.local?.status === "ready" ? true : undefined),
      180_000,
      () => replica.stderr().slice(-3000),
    );
    live.push(name);
    return replica;
  }

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS, "temporal", "gofakes3"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-scale-out-"));
    backends = await startScaleOutBackends("the scale-out drive", { temporal: true });
    temporal = backends.temporal;
    project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "cloud"),
      hcloudPort: 0,
      agentIntervalMs: 500,
      logger: quiet,
      projectDir: project,
      onFakeHcloud: (fake) =>
        fake.app.addHook("onRequest", async (request) => {
          if (createsHeld && request.method === "POST" && request.url.split("?")[0]!.endsWith("/servers")) {
            heldCreates += 1;
            await createsHeld;
          }
        }),
    });
    // Only the autoscaled pool: every server of the fake is then a claim's.
    editLocalPools(cloud, (pools) => pools.filter((p) => p.name === POOL));
    await runPulumi(UP, project, cloud.env);
    // A second cluster whose stack names a location Hetzner does not have: it fails to start, on both replicas.
    const broken = parseDocument(readFileSync(cloud.stackFile!, "utf8"));
    broken.setIn(["config", "nodefleet:cluster", "id"], "broken");
    broken.setIn(["config", "nodefleet:pools", 0, "location"], "mars");
    writeFileSync(join(project, "stacks", "Pulumi.broken.yaml"), broken.toString());
    await Promise.all(["a", "b"].map((name) => startReplica(name)));
  });

  after(async () => {
    await Promise.all([...replicas.values()].map((replica) => stopServe(replica)));
    // Each cluster's engine runs in <data-dir>/<stack>: what a killed replica's CLI left there.
    for (const replica of replicas.values()) await stopProcesses(leftoversOfEndedEngines(join(replica.dataDir, "local")));
    await cloud?.stop();
    await backends?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("converges creates spread over both replicas to one server and one Ready Node each, run by the stack's workflow", async () => {
    const ids = await createClaims(spread, claimNames("spread", 4), CREATE);
    created.push(...ids);
    const running = await awaitRunning(spread, ids, karpenterPace, PROVIDER_IDS);
    await waitFor("a Ready Node per claim", async () => {
      const ready = (await poolNodes(cloud!, POOL)).filter(isReady).map((n) => n.spec.providerID);
      return running.every((n) => ready.includes(n.providerID)) ? true : undefined;
    });
    const status = await stackRunsStatus(temporal!.client, "local", "0");
    assert.ok(status.runs >= 1, `the workflow ran the stack (${status.runs} runs)`);
    assert.equal(status.lastRun?.outcome, "succeeded");
    for (const replica of replicas.values()) {
      assert.match(replica.stderr(), /engine runs are Temporal workflows/);
      const ups = (await replica.client.operations()).filter((o) => o.kind === "up");
      assert.ok(ups.length >= 1 && ups.every((o) => o.result === "succeeded"), JSON.stringify(ups));
    }
  });

  it("finishes on the other replica a run whose replica was killed, which kept answering: no duplicate, no orphan", async () => {
    const marks = new Map([...replicas].map(([name, r]) => [name, r.stderr().length]));
    const ids = await createClaims(spread, claimNames("kill", 6), CREATE);
    created.push(...ids);
    const batch = new Set(ids);
    const victim = await waitFor(
      "a replica's engine run creating the batch's servers",
      async () => {
        const busy = live.filter((name) => runUnderWay(replicas.get(name)!, marks.get(name)!));
        const started = [...(await serversByClaim(cloud!)).keys()].some((node) => batch.has(node));
        return busy.length === 1 && started ? busy[0] : undefined;
      },
      100,
    );
    const killed = replicas.get(victim)!;
    const survivorName = live.find((name) => name !== victim)!;
    const survivor = replicas.get(survivorName)!;
    const survivorMark = survivor.stderr().length;

    // The survivor's reads and creates, from just before the kill until every claim has converged.
    const answers: Array<{ what: string; ms: number; error?: string }> = [];
    let probing = true;
    const probe = (async () => {
      for (let round = 0; probing; round++) {
        const started = Date.now();
        const what = round % 5 === 2 && round < 15 ? `POST during-${round}` : "GET";
        try {
          if (what === "GET") await survivor.client.listNodes();
          else created.push((await survivor.client.createNode({ ...CREATE, uniqueID: `during-${round}` })).node.nodeID);
          answers.push({ what, ms: Date.now() - started });
        } catch (error) {
          answers.push({ what, ms: Date.now() - started, error: String(error) });
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    })();
    await crashWithChildren(killed);
    live = [survivorName];
    assert.ok(runUnderWay(killed, marks.get(victim)!), "the kill came during the engine run");

    let running: NodeView[];
    try {
      await waitFor("the three creates made during the kill", async () =>
        answers.filter((a) => a.what !== "GET").length >= 3 ? true : undefined,
      );
      running = await awaitRunning(spread, created, karpenterPace, PROVIDER_IDS);
    } finally {
      probing = false;
      await probe;
    }
    assert.deepEqual(
      answers.filter((a) => a.error !== undefined),
      [],
      "the other replica answered every request",
    );
    assert.ok(answers.length >= 20, `${answers.length} requests while the run moved`);
    assert.ok(Math.max(...answers.map((a) => a.ms)) < 30_000, `answers within 30 s: ${JSON.stringify(answers)}`);

    // The survivor's worker ran the stack after the kill, and its run marked the killed one abandoned.
    assert.match(survivor.stderr().slice(survivorMark), /engine run starting/);
    const operations = await survivor.client.operations();
    assert.ok(
      operations.some((o) => o.result === "abandoned"),
      `the killed run is recorded as abandoned: ${JSON.stringify(operations)}`,
    );

    // Every server of the fake (every page, labelled or not) is a claim's, and each claim has one.
    const servers = await serversByClaim(cloud!);
    assert.deepEqual([...servers.keys()].sort(), [...created].sort(), "the fake's servers are the claims': no orphan");
    for (const node of running)
      assert.deepEqual(servers.get(node.nodeID), [Number(node.instanceID)], `${node.nodeID}: one server, its instance`);
    await waitFor("a Ready Node per claim", async () => {
      const ready = (await poolNodes(cloud!, POOL)).filter(isReady).map((n) => n.spec.providerID);
      return running.every((n) => ready.includes(n.providerID)) ? true : undefined;
    });
  });

  it("serves cluster local unaffected beside a broken stack: failed in /readyz, 503 for its requests, no workflow", async () => {
    const survivor = replicas.get(live[0]!)!;
    const answer = await readiness(survivor);
    assert.equal(answer.status, 200, "a broken stack leaves the replica ready for the other cluster");
    assert.equal(answer.body.details.clusters.local?.status, "ready");
    assert.equal(answer.body.details.clusters.broken?.status, "failed");
    assert.match(String(answer.body.details.clusters.broken?.details?.error), /location must be a Hetzner Cloud location/);
    const refused = await new NodefleetClient({ baseUrl: survivor.baseUrl, clusterId: "broken", token: BROKEN_TOKEN })
      .createNode({ ...CREATE, uniqueID: "broken-1" })
      .catch((error: unknown) => error);
    assert.ok(refused instanceof NodefleetApiError && refused.status === 503, String(refused));
    const workflows = [];
    for await (const execution of temporal!.client.workflow.list({ query: `WorkflowId = "${stackRunsWorkflowId("broken", "0")}"` }))
      workflows.push(execution.workflowId);
    assert.deepEqual(workflows, [], "the broken cluster never reached Temporal");
  });

  it("takes the killed replica back; an operator's cancel of the workflow aborts its engine run, and the next change runs the claims", async () => {
    const killed = [...replicas.keys()].find((name) => !live.includes(name))!;
    await startReplica(killed);
    assert.equal(live.length, 2);

    // The run's server creates are held at the fake until the cancel has reached the run: the worker
    // learns of it from a heartbeat's answer, and the SDK sends heartbeats at most every 24 s (80 %
    // of the activity's 30 s heartbeat timeout), longer than a run of a few claims takes here.
    let release = () => {};
    createsHeld = new Promise((resolve) => (release = resolve));
    const handle = temporal!.client.workflow.getHandle(stackRunsWorkflowId("local", "0"));
    try {
      created.push(...(await createClaims(spread, claimNames("cancel", 4), CREATE)));
      await waitFor("the run's server creates at the fake", async () => (heldCreates > 0 ? true : undefined), 100);
      await handle.cancel();
      await new Promise((resolve) => setTimeout(resolve, 30_000));
    } finally {
      createsHeld = undefined;
      release();
    }
    // The workflow closes once the run has stopped (the activity waits for its cancellation to complete).
    const closed = await waitFor("the workflow closed", async () => {
      const status = (await handle.describe()).status.name;
      return status === "RUNNING" ? undefined : status;
    });
    assert.equal(closed, "CANCELLED");
    const abandoned = (await replicas.get(live[0]!)!.client.operations()).filter((o) => o.result === "abandoned");
    assert.ok(
      abandoned.some((o) => /cancelled through the run scheduler/.test(o.error ?? "")),
      `the cancelled run is recorded as abandoned: ${JSON.stringify(abandoned)}`,
    );

    // The next change starts a new execution, which runs the cancelled batch's claims with its own.
    created.push((await spread.createNode({ ...CREATE, uniqueID: "cancel-next" })).node.nodeID);
    const running = await awaitRunning(spread, created, karpenterPace, PROVIDER_IDS);
    const servers = await serversByClaim(cloud!);
    assert.deepEqual([...servers.keys()].sort(), [...created].sort(), "the fake's servers are the claims': no orphan");
    for (const node of running)
      assert.deepEqual(servers.get(node.nodeID), [Number(node.instanceID)], `${node.nodeID}: one server, its instance`);
  });

  it("deletes every claim, spread over both replicas, until 404: no server or Node left", async () => {
    assert.equal(live.length, 2);
    await deleteUntilGone(spread, created, karpenterPace);
    assert.deepEqual([...(await serversByClaim(cloud!)).keys()], [], "no server left");
    await waitFor("no Node of the pool", async () => ((await poolNodes(cloud!, POOL)).length === 0 ? true : undefined));
  });
});
