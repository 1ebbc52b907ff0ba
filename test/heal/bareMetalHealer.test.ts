/**
 * Issue 38 part 5: the bare-metal healer walks a NotReady Node up the remediation ladder, one Node
 * of a pool at a time, resumes from the step recorded on the Node after a restart, changes nothing
 * in dry run, and reaches the machines through the local cloud's fake Robot webservice and fake
 * Scaleway API (each checked against its provider's documentation in its own tests).
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeRobot, buildFakeRobot } from "../../automation/local/fakeRobot/fakeRobotApi";
import { type FakeScaleway, buildFakeScaleway } from "../../automation/local/fakeScaleway/fakeScalewayApi";
import { BareMetalHealer, type HealMode } from "../../automation/heal/bareMetalHealer";
import { type BareMetalTarget, bareMetalTargets } from "../../automation/heal/bareMetalTargets";
import { recordStepWith, runRungWith } from "../../automation/heal/remediationActions";
import { recordedStep, remediationCondition } from "../../automation/heal/remediationCondition";
import { parseFleetSpec } from "../../components/fleet/fleetSpec";
import type { RemediationStep } from "../../components/robot/robotRemediation";
import { RobotClient } from "../../components/robot/robotClient";
import { orderElasticMetalServer } from "../support/fakeScalewayServers";
import { elasticMetalPoolConfig, rawFleetConfig } from "../support/fleetConfigFixture";

const MIN = 60_000;
const USER = "#ws+healer";
const PASSWORD = "healer-test-password";
const SCW_KEY = "6f1a2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b";
const PROJECT = "11111111-2222-4333-a444-555555555555";
const T0 = Date.parse("2026-12-04T12:00:00Z");

/** A Node as the API server lists it: Ready or not since `changedAt`, with extra conditions. */
function node(name: string, ready: boolean, changedAt: number, extra: unknown[] = []) {
  return {
    metadata: { name },
    status: {
      conditions: [{ type: "Ready", status: ready ? "True" : "False", lastTransitionTime: new Date(changedAt).toISOString() }, ...extra],
    },
  };
}

describe("bare-metal healer", function () {
  this.timeout(30_000);
  let directory: string;
  let robot: FakeRobot;
  let robotUrl: string;
  let scaleway: FakeScaleway;
  let scalewayUrl: string;
  const robotTargets = (numbers: readonly number[]): BareMetalTarget[] => [
    { kind: "hetzner-robot", nodeName: "c1-metal-a", pool: "metal", serverNumber: numbers[0]! },
    { kind: "hetzner-robot", nodeName: "c1-metal-b", pool: "metal", serverNumber: numbers[1]! },
  ];
  let numbers: number[];

  /** The resets the fake Robot applied, by server number. */
  const resets = (serverNumber: number) =>
    robot.state
      .servers()
      .find((s) => s.serverNumber === serverNumber)!
      .resets.map((r) => r.type);

  function healer(nodes: () => unknown, targets: BareMetalTarget[], clock: { now: number }, mode: HealMode = "on") {
    const written: Array<{ node: string; step: RemediationStep; since: number }> = [];
    const observed: string[] = [];
    const client = new RobotClient({ baseUrl: robotUrl, credentials: { user: USER, password: PASSWORD } });
    const instance = new BareMetalHealer({
      targets: () => targets,
      mode,
      notReadyForMs: 5 * MIN,
      now: () => clock.now,
      observe: (pool, action) => observed.push(`${pool}:${action}`),
      io: {
        listNodes: async () => nodes(),
        recordStep: async (name, step, since) => {
          written.push({ node: name, step, since });
        },
        runRung: runRungWith({ robot: client, scaleway: { apiUrl: scalewayUrl, secretKey: SCW_KEY } }),
      },
    });
    return { instance, written, observed };
  }

  beforeEach(async function () {
    directory = mkdtempSync(join(tmpdir(), "nodefleet-healer-"));
    robot = buildFakeRobot({ user: USER, password: PASSWORD, stateFile: join(directory, "robot.json"), servers: 2 });
    robotUrl = await robot.app.listen({ port: 0, host: "127.0.0.1" });
    numbers = robot.state.servers().map((s) => s.serverNumber);
    scaleway = buildFakeScaleway({
      secretKey: SCW_KEY,
      projectId: PROJECT,
      stateFile: join(directory, "scw.json"),
      actionMs: 20,
      installMs: 0,
    });
    scalewayUrl = await scaleway.app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterEach(async function () {
    await robot.app.close();
    await scaleway.app.close();
    rmSync(directory, { recursive: true, force: true });
  });

  it("leaves a Node NotReady for less than the grace period alone", async function () {
    const clock = { now: T0 };
    const { instance, written } = healer(() => ({ items: [node("c1-metal-a", false, T0 - 4 * MIN)] }), robotTargets(numbers), clock);
    assert.deepEqual(await instance.check(), []);
    assert.deepEqual(written, []);
    assert.deepEqual(resets(numbers[0]!), []);
  });

  it("climbs sw then hw reset, never power, one Node of the pool at a time, and then gives up", async function () {
    const clock = { now: T0 };
    const nodes = { items: [node("c1-metal-a", false, T0 - 6 * MIN), node("c1-metal-b", false, T0 - 7 * MIN)] };
    const { instance, written, observed } = healer(() => nodes, robotTargets(numbers), clock);
    // The service holds no pinned host key, so the SSH reboot is skipped for the software reset.
    const first = await instance.check();
    assert.deepEqual(
      first.map((a) => `${a.node}:${a.action}${a.rung ? `(${a.rung})` : ""}`),
      ["c1-metal-a:skipped(ssh-reboot)", "c1-metal-a:sw-reset"],
    );
    assert.deepEqual(resets(numbers[0]!), ["sw"]);
    assert.deepEqual(resets(numbers[1]!), [], "the pool's second NotReady Node waits for the first");
    assert.deepEqual(written, [{ node: "c1-metal-a", step: "sw-reset", since: T0 }]);

    clock.now = T0 + 9 * MIN;
    assert.deepEqual(await instance.check(), [], "the software reset gets its 10 minutes");
    clock.now = T0 + 10 * MIN;
    assert.deepEqual(
      (await instance.check()).map((a) => a.action),
      ["hw-reset"],
    );
    assert.deepEqual(resets(numbers[0]!), ["sw", "hw"]);
    clock.now = T0 + 20 * MIN;
    assert.deepEqual(
      (await instance.check()).map((a) => `${a.node}:${a.action}`),
      ["c1-metal-a:failed", "c1-metal-b:skipped", "c1-metal-b:sw-reset"],
    );
    clock.now = T0 + 25 * MIN;
    assert.deepEqual(await instance.check(), [], "a permanently failed Node is left to a person");
    assert.ok(!resets(numbers[0]!).includes("power"));
    assert.deepEqual(observed, ["metal:sw-reset", "metal:hw-reset", "metal:failed", "metal:sw-reset"]);
  });

  it("records recovery on the Node and resumes a ladder from the step on the Node after a restart", async function () {
    const clock = { now: T0 + 11 * MIN };
    const onLadder = remediationCondition("sw-reset", T0);
    let ready = false;
    const nodes = () => ({ items: [node("c1-metal-a", ready, T0 - 6 * MIN, [onLadder]), node("c1-metal-b", true, T0 - 60 * MIN)] });
    // A new process: nothing in memory, the step read from the Node's condition.
    const { instance, written } = healer(nodes, robotTargets(numbers), clock);
    assert.deepEqual(
      (await instance.check()).map((a) => a.action),
      ["hw-reset"],
    );
    assert.deepEqual(resets(numbers[0]!), ["hw"]);
    ready = true;
    clock.now = T0 + 13 * MIN;
    assert.deepEqual(
      (await instance.check()).map((a) => a.action),
      ["recovered"],
    );
    assert.deepEqual(written.at(-1), { node: "c1-metal-a", step: "none", since: T0 + 13 * MIN });
    assert.deepEqual(recordedStep([remediationCondition("none", T0)]), { step: "none", sinceMs: 0 });
    assert.deepEqual(recordedStep([remediationCondition("hw-reset", T0)]), { step: "hw-reset", sinceMs: T0 });
  });

  it("frees the pool's slot when the Node on the ladder goes away", async function () {
    const clock = { now: T0 };
    let nodes = [node("c1-metal-a", false, T0 - 6 * MIN), node("c1-metal-b", false, T0 - 6 * MIN)];
    const { instance } = healer(() => ({ items: nodes }), robotTargets(numbers), clock);
    assert.deepEqual(
      (await instance.check()).map((a) => `${a.node}:${a.action}`),
      ["c1-metal-a:skipped", "c1-metal-a:sw-reset"],
    );
    // The first member's Node is deleted (say, a reinstall): the second takes the pool's turn.
    nodes = [nodes[1]!];
    clock.now = T0 + MIN;
    assert.deepEqual(
      (await instance.check()).map((a) => `${a.node}:${a.action}`),
      ["c1-metal-b:skipped", "c1-metal-b:sw-reset"],
    );
  });

  it("in dry run walks the ladder in its logs only: no reset, nothing written", async function () {
    const clock = { now: T0 };
    const nodes = { items: [node("c1-metal-a", false, T0 - 6 * MIN)] };
    const { instance, written, observed } = healer(() => nodes, robotTargets(numbers), clock, "dry-run");
    assert.deepEqual(
      (await instance.check()).map((a) => a.action),
      ["ssh-reboot"],
    );
    clock.now = T0 + 5 * MIN;
    assert.deepEqual(
      (await instance.check()).map((a) => a.action),
      ["sw-reset"],
    );
    assert.deepEqual(resets(numbers[0]!), []);
    assert.deepEqual(written, []);
    assert.deepEqual(observed, ["metal:ssh-reboot", "metal:sw-reset"]);
  });

  it("reboots an Elastic Metal server through Scaleway's API, then gives up (no hardware rung)", async function () {
    const zone = "fr-par-2";
    for (const name of ["c1-gpu-a", "c1-gpu-a-old"]) {
      await orderElasticMetalServer({ apiUrl: scalewayUrl, secretKey: SCW_KEY, projectId: PROJECT }, zone, name);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    const clock = { now: T0 };
    const target: BareMetalTarget = { kind: "scaleway-elastic-metal", nodeName: "c1-gpu-a", pool: "gpu", zone };
    const { instance } = healer(() => ({ items: [node("c1-gpu-a", false, T0 - 6 * MIN)] }), [target], clock);
    assert.deepEqual(
      (await instance.check()).map((a) => a.action),
      ["skipped", "sw-reset"],
    );
    const rebooted = scaleway.state
      .all("servers")
      .filter((s) => s.rebootingUntil !== undefined)
      .map((s) => s.name);
    assert.deepEqual(rebooted, ["c1-gpu-a"], "only the server of exactly that name");
    clock.now = T0 + 10 * MIN;
    assert.deepEqual(
      (await instance.check()).map((a) => a.action),
      ["skipped", "failed"],
    );
  });

  it("a failed reset is retried at the next check, and a Robot rung without credentials says which are missing", async function () {
    const clock = { now: T0 };
    const warnings: string[] = [];
    const instance = new BareMetalHealer({
      targets: () => robotTargets(numbers),
      mode: "on",
      now: () => clock.now,
      logger: { warn: (fields: { err?: string }) => warnings.push(fields.err ?? "") } as never,
      io: {
        listNodes: async () => ({ items: [node("c1-metal-a", false, T0 - 6 * MIN)] }),
        recordStep: async () => undefined,
        runRung: runRungWith({}),
      },
    });
    assert.deepEqual(await instance.check(), []);
    assert.match(warnings.join("\n"), /no Robot webservice credentials are set \(HROBOT_USER, HROBOT_PASSWORD\)/);
  });

  it("finds the stack's Robot and Elastic Metal members by Node name", function () {
    const robotPool = {
      name: "metal",
      provider: "hetzner-robot",
      mode: "static",
      servers: [{ serverNumber: 7, name: "a" }],
      sshKeyFingerprints: ["15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb"],
    };
    const fleet = parseFleetSpec(rawFleetConfig({ pools: [robotPool, elasticMetalPoolConfig({ name: "gpu", replicas: 1 })] }));
    const targets = bareMetalTargets(fleet);
    const id = fleet.cluster.id;
    assert.deepEqual(
      targets.map((t) => `${t.kind} ${t.pool} ${t.nodeName} ${"serverNumber" in t ? t.serverNumber : t.zone}`),
      [`hetzner-robot metal ${id}-metal-a 7`, `scaleway-elastic-metal gpu ${id}-gpu-0 fr-par-2`],
    );
  });

  it("writes the step as the Node's condition with a strategic merge by type", async function () {
    const requests: Array<{ method: string; url: string; type: string; body: string }> = [];
    const { createServer } = await import("node:http");
    const api = createServer((request, response) => {
      let body = "";
      request.on("data", (c: Buffer) => (body += c.toString()));
      request.on("end", () => {
        requests.push({ method: request.method!, url: request.url!, type: String(request.headers["content-type"]), body });
        response.setHeader("content-type", "application/json");
        response.end("{}");
      });
    });
    await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
    const port = (api.address() as { port: number }).port;
    const kubeconfig = `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n`;
    try {
      await recordStepWith(() => kubeconfig)("c1-metal-a", "failed", T0);
    } finally {
      api.close();
    }
    assert.equal(requests.length, 1);
    assert.equal(requests[0]!.method, "PATCH");
    assert.equal(requests[0]!.url, "/api/v1/nodes/c1-metal-a/status");
    assert.equal(requests[0]!.type, "application/strategic-merge-patch+json");
    const condition = (JSON.parse(requests[0]!.body) as { status: { conditions: Array<Record<string, string>> } }).status.conditions[0]!;
    assert.equal(condition.type, "NodefleetRemediation");
    assert.equal(condition.reason, "PermanentFailure");
    assert.equal(condition.status, "True");
  });
});
