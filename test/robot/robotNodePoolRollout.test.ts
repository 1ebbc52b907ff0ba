/**
 * A reinstall or a version re-join rolling through a Hetzner Robot pool of six servers across
 * successive runs of the fleet program under mocks: each run gets the previous run's `nodes` output,
 * as a plain `pulumi up` reads it from its own stack; without a kubeconfig every Node counts as Ready.
 */
import { strict as assert } from "node:assert";
import { type MockRunResult, type RecordedResource, runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { type HetznerRobotPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import type { InPlaceRolloutSummary } from "../../components/fleet/rolloutPlan";
import { RobotNodePool } from "../../components/robot/robotNodePool";
import { type CurrentInPlaceMember, currentInPlaceMembers, inPlaceRolloutGeneration } from "../../components/fleet/inPlaceMembers";
import { robotMembers } from "../../components/robot/robotPlan";
import { runProgram } from "../../stacks/fleetProgram";
import { clusterConfig, rawFleetConfig } from "../support/fleetConfigFixture";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const UPDATE_DRAIN = "pulumi-nodejs:dynamic/nodefleet:KubernetesNodeUpdateDrain";
const METADATA = "pulumi-nodejs:dynamic/nodefleet:KubernetesNodeMetadata";
const FINGERPRINT = "15:28:b0:03:95:f0:77:b3:10:56:15:6b:77:22:a5:bb";
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAexample\n-----END OPENSSH PRIVATE KEY-----\n";
const POOL = "fsn-metal";
const SERVERS = Array.from({ length: 6 }, (_, i) => ({ serverNumber: 100 + i, name: `s${i}` }));
const NODE_IDS = SERVERS.map((s) => `${POOL}-${s.name}`);

type Run = MockRunResult<Record<string, unknown>>;
type NodeValues = { nodeId: string; hostname: string; pool: string; generation: string; joinInputs: string };

function robotPool(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: POOL, provider: "hetzner-robot", mode: "static", servers: SERVERS, sshKeyFingerprints: [FINGERPRINT], ...overrides };
}

async function up(k0sVersion: string, previousNodes: unknown, pool: Record<string, unknown> = {}): Promise<Run> {
  return runUnderMocks({
    stack: "test",
    config: { ...rawFleetConfig({ cluster: clusterConfig({ k0sVersion }), pools: [robotPool(pool)] }), "nodefleet:sshPrivateKey": SSH_KEY },
    secretKeys: ["nodefleet:sshPrivateKey"],
    program: () => runProgram({ allowMissingKubeconfig: true, ...(previousNodes !== undefined ? { previousNodes } : {}) }),
  });
}

const plain = <T>(value: unknown) => resolveSecrets(value, true) as T;
const nodesOf = (run: Run) => plain<NodeValues[]>(run.outputs.nodes);
const summaryOf = (run: Run) => plain<InPlaceRolloutSummary[]>(run.outputs.rollout).find((r) => r.pool === POOL);
const byName = (resources: RecordedResource[], name: string) => {
  const found = resources.find((r) => r.name === name);
  assert.ok(found, `no resource named ${name}`);
  return found;
};
const joinTrigger = (run: Run, nodeId: string) => (byName(run.resources, `example-${POOL}-${nodeId}-join`).inputs.triggers as unknown[])[1];
const rescueGeneration = (run: Run, nodeId: string) => byName(run.resources, `example-${POOL}-${nodeId}-rescue`).inputs.generation;

describe("RobotNodePool rolling reinstalls and re-joins across runs (mock runtime)", function () {
  this.timeout(600_000);

  it("re-joins one server per run on a new k0s version (default maxUnavailable 1), the others keep their join", async () => {
    const first = await up("v1.33.4+k0s.0", undefined);
    const before = nodesOf(first);
    assert.ok(
      before.every((n) => typeof n.joinInputs === "string" && n.joinInputs.length === 64),
      "every node records its join",
    );
    assert.deepEqual(summaryOf(first), { pool: POOL, inPlace: true, updating: [], remaining: 0 }, "a first run installs, nothing to roll");

    let previous: unknown = first.outputs.nodes;
    const perRun: string[][] = [];
    for (let run = 0; run < 8; run++) {
      const next = await up("v1.33.5+k0s.0", previous);
      const summary = summaryOf(next)!;
      const nodes = nodesOf(next);
      if (summary.updating.length === 0 && summary.remaining === 0) break;
      perRun.push(summary.updating.map((u) => u.nodeId));
      assert.ok(
        summary.updating.every((u) => u.change === "re-join"),
        "a version changes no install",
      );
      const updated = new Set(perRun.flat());
      for (const nodeId of NODE_IDS) {
        const node = nodes.find((n) => n.nodeId === nodeId)!;
        const original = before.find((n) => n.nodeId === nodeId)!;
        assert.equal(node.generation, original.generation, `${nodeId}: never reinstalled`);
        assert.equal(rescueGeneration(next, nodeId), original.generation);
        if (updated.has(nodeId)) {
          assert.notEqual(node.joinInputs, original.joinInputs, `${nodeId} re-joined`);
          assert.equal(joinTrigger(next, nodeId), node.joinInputs, "with the new version's join");
        } else {
          assert.equal(node.joinInputs, original.joinInputs, `${nodeId} keeps its join until its turn`);
          assert.equal(joinTrigger(next, nodeId), original.joinInputs);
        }
      }
      assert.equal(summary.remaining, NODE_IDS.length - updated.size);
      if (summary.remaining > 0) assert.equal(summary.waiting, "maxUnavailable 1 reached");
      previous = next.outputs.nodes;
    }
    assert.deepEqual(
      perRun,
      NODE_IDS.map((id) => [id]),
      "one member per run, in order, each exactly once",
    );
  });

  it("reinstalls one server per run on a new image, two with maxUnavailable 2, and never gives a waiting member a new token", async () => {
    const first = await up("v1.33.4+k0s.0", undefined);
    const reimaged = await up("v1.33.4+k0s.0", first.outputs.nodes, { image: "ubuntu-22.04" });
    assert.deepEqual(summaryOf(reimaged)?.updating, [{ nodeId: `${POOL}-s0`, change: "reinstall" }]);
    const old = nodesOf(first);
    const changed = NODE_IDS.filter((id) => rescueGeneration(reimaged, id) !== old.find((n) => n.nodeId === id)!.generation);
    assert.deepEqual(changed, [`${POOL}-s0`], "only the member whose turn it is reinstalls");
    const tokens = reimaged.resources.filter((r) => r.name.endsWith("-token") && r.name.startsWith(`example-${POOL}-`)).map((r) => r.name);
    for (const id of NODE_IDS.slice(1)) {
      const generation = old.find((n) => n.nodeId === id)!.generation;
      assert.ok(
        tokens.some((t) => t.startsWith(`example-${POOL}-${id}-${generation}-token`)),
        `${id} keeps its token`,
      );
    }
    const install = (run: Run, id: string) => plain<string>(byName(run.resources, `example-${POOL}-${id}-install`).inputs.stdin);
    assert.match(install(reimaged, `${POOL}-s0`), /Ubuntu-2204-jammy/);

    const faster = await up("v1.33.4+k0s.0", first.outputs.nodes, { image: "ubuntu-22.04", rollout: { maxUnavailable: 2 } });
    assert.deepEqual(
      summaryOf(faster)?.updating.map((u) => u.nodeId),
      [`${POOL}-s0`, `${POOL}-s1`],
    );
    assert.equal(summaryOf(faster)?.remaining, 4);
  });

  it("refuses a surge for Robot (fixed machines) and maxUnavailable 0, naming the field", () => {
    const parse = (rollout: unknown) => () => parseFleetSpec(rawFleetConfig({ pools: [robotPool({ rollout })] }));
    assert.throws(parse({ maxSurge: 1 }), /rollout\.maxSurge: maxSurge must be 0 \(or left out\): Robot servers are fixed machines/);
    assert.throws(parse({ maxUnavailable: 0 }), /rollout\.maxUnavailable: maxUnavailable must be at least 1/);
    const spec = parseFleetSpec(rawFleetConfig({ pools: [robotPool()] }));
    assert.deepEqual((spec.pools[0] as HetznerRobotPool).rollout, { maxUnavailable: 1, drainTimeoutSeconds: 600 });
  });

  it("drains the member whose turn it is before its rescue and join, uncordons it after, and keeps the others as installed", async () => {
    const spec = parseFleetSpec(rawFleetConfig({ cluster: clusterConfig({ k0sVersion: "v1.33.4+k0s.0" }), pools: [robotPool()] }));
    const { kubeconfig: _k, ...cluster } = spec.cluster;
    const pool = spec.pools[0] as HetznerRobotPool;
    const current: CurrentInPlaceMember[] = robotMembers(cluster, pool).map((m) => ({
      nodeId: m.member.nodeId,
      generation: m.generation,
      joinInputs: m.joinInputs,
      ready: true,
    }));
    const wanted = robotMembers({ ...cluster, k0sVersion: "v1.33.5+k0s.0" }, { ...pool, image: "ubuntu-22.04" });
    const options = new Map<string, { dependsOn?: unknown; ignoreChanges?: string[] }>();
    const { resources } = await runUnderMocks({
      stack: "test",
      config: { "nodefleet:sshPrivateKey": SSH_KEY },
      secretKeys: ["nodefleet:sshPrivateKey"],
      program: () => {
        const component = new RobotNodePool(
          `example-${POOL}`,
          {
            cluster: { ...cluster, k0sVersion: "v1.33.5+k0s.0" },
            pool: { ...pool, image: "ubuntu-22.04" },
            current,
            kubeconfig: tokenKubeconfig("t0ken"),
          },
          {
            transformations: [
              (a) => {
                options.set(a.name, a.opts as { dependsOn?: unknown; ignoreChanges?: string[] });
                return undefined;
              },
            ],
          },
        );
        return { drains: component.updateDrains.map((d) => d.urn) };
      },
    });
    const first = NODE_IDS[0];
    const generation = inPlaceRolloutGeneration(wanted[0]);
    const drains = resources.filter((r) => r.type === UPDATE_DRAIN);
    assert.deepEqual(
      drains.map((d) => d.name),
      [`example-${first}-${generation}-drain`],
      "only the member whose turn it is is drained",
    );
    assert.deepEqual(plain<Record<string, unknown>>(drains[0].inputs).nodeName, `example-${first}`);
    assert.equal(plain<Record<string, unknown>>(drains[0].inputs).timeoutSeconds, 600);
    const dependsOnDrain = (name: string) => {
      const deps = ([] as unknown[]).concat(options.get(name)?.dependsOn ?? []);
      return deps.some((d) => (d as { constructor?: { name?: string } })?.constructor?.name === "KubernetesNodeUpdateDrain");
    };
    assert.ok(dependsOnDrain(`example-${POOL}-${first}-rescue`), "the reinstall waits for the drain");
    assert.ok(dependsOnDrain(`example-${POOL}-${first}-join`), "so does the join");
    const metadata = (id: string) => plain<Record<string, unknown>>(byName(resources, `example-${POOL}-${id}-node-metadata`).inputs);
    assert.equal(metadata(first).generation, generation, "the update after the join uncordons the drained Node");

    for (const [index, id] of NODE_IDS.entries()) {
      if (index === 0) {
        for (const part of ["rescue", "install", "join"])
          assert.deepEqual(options.get(`example-${POOL}-${id}-${part}`)?.ignoreChanges ?? [], [], `${id}-${part} ignores nothing`);
        continue;
      }
      assert.ok(!dependsOnDrain(`example-${POOL}-${id}-rescue`) && !dependsOnDrain(`example-${POOL}-${id}-join`), `${id} is not drained`);
      assert.equal(
        byName(resources, `example-${POOL}-${id}-rescue`).inputs.generation,
        current[index].generation,
        `${id} is not reinstalled`,
      );
      assert.deepEqual(options.get(`example-${POOL}-${id}-join`)?.ignoreChanges, ["stdin"], `${id} keeps the join script it ran`);
      assert.deepEqual(options.get(`example-${POOL}-${id}-install`)?.ignoreChanges, ["stdin"]);
      assert.deepEqual(options.get(`example-${POOL}-${id}-rescue`)?.ignoreChanges, ["serverNumber", "fingerprints"]);
      assert.equal(metadata(id).generation, inPlaceRolloutGeneration(current[index]));
      assert.equal(
        plain<Record<string, string>>(metadata(id).labels)["topology.kubernetes.io/zone"],
        "hetzner-robot",
        "labels converge on every member at once",
      );
    }
    assert.equal(resources.filter((r) => r.type === METADATA).length, NODE_IDS.length);
  });

  it("reads the previous run's members, and none from a nodefleet that did not record joins", () => {
    const nodes = [
      { pool: POOL, nodeId: `${POOL}-s0`, hostname: `example-${POOL}-s0`, generation: "aaaaaa", joinInputs: "f".repeat(64) },
      { pool: "other", nodeId: "other-0", hostname: "example-other-0", generation: "bbbbbb", joinInputs: "e".repeat(64) },
    ];
    assert.deepEqual(currentInPlaceMembers(nodes, POOL, new Set([`example-${POOL}-s0`])), [
      { nodeId: `${POOL}-s0`, generation: "aaaaaa", joinInputs: "f".repeat(64), ready: true, memberResources: "dynamic" },
    ]);
    for (const flavour of ["plugin", "plugin-all"])
      assert.equal(
        currentInPlaceMembers([{ ...nodes[0], memberResources: flavour }], POOL, new Set())?.[0].memberResources,
        flavour,
        "a member's recorded flavour is carried to the next run",
      );
    assert.equal(currentInPlaceMembers(nodes, POOL, new Set())?.[0].ready, false);
    assert.equal(currentInPlaceMembers([{ ...nodes[0], joinInputs: undefined }], POOL, new Set()), undefined);
  });

  it("keeps each member's recorded flavour: one recorded before the plugin keeps its dynamic resources, the others use the pool's provider", async () => {
    const spec = parseFleetSpec(
      rawFleetConfig({ cluster: clusterConfig({ k0sVersion: "v1.33.4+k0s.0" }), pools: [robotPool({ rollout: { maxUnavailable: 6 } })] }),
    );
    const { kubeconfig: _k, ...cluster } = spec.cluster;
    const pool = spec.pools[0] as HetznerRobotPool;
    const [earlier, recorded] = robotMembers(cluster, pool);
    const running = (m: typeof earlier) => ({
      nodeId: m!.member.nodeId,
      generation: m!.generation,
      joinInputs: m!.joinInputs,
      ready: true,
    });
    // No memberResources: recorded by a nodefleet before the plugin, so `dynamic`; one recorded `plugin`
    // (created before the plugin's token and rescue); the other four are new (`plugin-all`).
    const current: CurrentInPlaceMember[] = [running(earlier), { ...running(recorded), memberResources: "plugin" }];
    const dependencies = new Map<string, unknown>();
    const { resources, outputs } = await runUnderMocks({
      stack: "test",
      config: { "nodefleet:sshPrivateKey": SSH_KEY },
      secretKeys: ["nodefleet:sshPrivateKey"],
      program: () => {
        // A new k0s version re-joins both running members this run, each drained first.
        const component = new RobotNodePool(
          `example-${POOL}`,
          {
            cluster: { ...cluster, k0sVersion: "v1.33.5+k0s.0" },
            pool,
            current,
            kubeconfig: tokenKubeconfig("t0ken"),
          },
          {
            transformations: [
              (a) => {
                dependencies.set(a.name, a.opts.dependsOn);
                return undefined;
              },
            ],
          },
        );
        return { nodes: component.nodes };
      },
    });
    const DYNAMIC = "pulumi-nodejs:dynamic/nodefleet:";
    const PLUGIN = "nodefleet:kubernetes:";
    const clusterSide = ["KubernetesNodeRemoval", "KubernetesNodeUpdateDrain", "KubernetesNodeMetadata"]
      .map((t) => DYNAMIC + t)
      .concat(["NodeRemoval", "NodeUpdateDrain", "NodeMetadata", "NodeDrain"].map((t) => PLUGIN + t));
    const of = (nodeId: string) => resources.filter((r) => clusterSide.includes(r.type) && new RegExp(`(^|-)${nodeId}(-|$)`).test(r.name));
    const typesOf = (nodeId: string) =>
      of(nodeId)
        .map((r) => r.type)
        .sort();
    assert.deepEqual(typesOf(earlier!.member.nodeId), [
      `${DYNAMIC}KubernetesNodeMetadata`,
      `${DYNAMIC}KubernetesNodeRemoval`,
      `${DYNAMIC}KubernetesNodeUpdateDrain`,
    ]);
    // The drain before removal (before the rescue and the Node go): the plugin's members only.
    assert.deepEqual(typesOf(recorded!.member.nodeId), [
      `${PLUGIN}NodeDrain`,
      `${PLUGIN}NodeMetadata`,
      `${PLUGIN}NodeRemoval`,
      `${PLUGIN}NodeUpdateDrain`,
    ]);
    for (const nodeId of NODE_IDS.slice(2))
      assert.deepEqual(typesOf(nodeId), [`${PLUGIN}NodeDrain`, `${PLUGIN}NodeMetadata`, `${PLUGIN}NodeRemoval`], nodeId);
    for (const nodeId of NODE_IDS.slice(1)) {
      const drain = of(nodeId).find((r) => r.type === `${PLUGIN}NodeDrain`)!;
      assert.equal(drain.name, `example-${nodeId}-removal-drain`);
      assert.deepEqual(plain(drain.inputs), { nodeName: `example-${nodeId}`, timeoutSeconds: 600 });
      assert.deepEqual(
        ([] as unknown[]).concat(dependencies.get(drain.name) ?? []).map((d) => (d as { __name?: string }).__name),
        [`example-${POOL}-${nodeId}-retire`],
        "deleted before the kubelet is retired, the rescue deactivated and the Node removed",
      );
    }
    for (const nodeId of NODE_IDS.slice(1)) {
      for (const r of of(nodeId)) {
        assert.match(String(r.provider), new RegExp(`pulumi:providers:nodefleet::example-${POOL}-cluster-access::`), r.name);
        assert.equal(r.inputs.credentials, undefined, `${r.name} carries no credentials`);
      }
    }
    assert.equal(resources.filter((r) => r.type === "pulumi:providers:nodefleet").length, 1, "one provider for the pool");
    // Token and rescue: the two recorded members keep the component and the dynamic rescue they were
    // created with (a new rescue would reinstall the server); the new ones get the plugin's.
    const memberOf = (r: { name: string }) => NODE_IDS.find((id) => r.name.startsWith(`example-${POOL}-${id}-`));
    const typeByMember = (type: string) => resources.filter((r) => r.type === type).map(memberOf);
    assert.deepEqual(typeByMember("pulumi-nodejs:dynamic/nodefleet:RobotRescue"), NODE_IDS.slice(0, 2));
    assert.deepEqual(typeByMember("nodefleet:hrobot:RobotRescue"), NODE_IDS.slice(2));
    assert.deepEqual(typeByMember("nodefleet:kubernetes:BootstrapToken"), NODE_IDS.slice(0, 2));
    assert.deepEqual(typeByMember("nodefleet:kubernetes:NodeBootstrapToken"), NODE_IDS.slice(2));
    for (const r of resources.filter(
      (r) => r.type === "nodefleet:hrobot:RobotRescue" || r.type === "nodefleet:kubernetes:NodeBootstrapToken",
    ))
      assert.match(String(r.provider), new RegExp(`pulumi:providers:nodefleet::example-${POOL}-cluster-access::`), r.name);
    assert.deepEqual(
      plain<Array<{ memberResources: string }>>(outputs.nodes).map((n) => n.memberResources),
      ["dynamic", "plugin", "plugin-all", "plugin-all", "plugin-all", "plugin-all"],
      "each member's flavour is recorded for the next run",
    );
  });

  it("keeps the dynamic resources of a pool an earlier nodefleet recorded without joins, and records plugin members on a first run", async () => {
    const first = await up("v1.33.4+k0s.0", undefined);
    assert.deepEqual(
      nodesOf(first).map((n) => (n as NodeValues & { memberResources?: string }).memberResources),
      NODE_IDS.map(() => "plugin-all"),
    );
    const unrecorded = nodesOf(first).map(({ joinInputs: _j, ...n }) => ({ ...n, memberResources: undefined }));
    const again = await up("v1.33.4+k0s.0", unrecorded);
    assert.deepEqual(
      nodesOf(again).map((n) => (n as NodeValues & { memberResources?: string }).memberResources),
      NODE_IDS.map(() => "dynamic"),
      "members the previous run could not describe are taken as created before the plugin",
    );
  });
});
