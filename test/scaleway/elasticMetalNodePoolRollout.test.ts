/**
 * An offer/OS change (server replaced, the old one released first) or a version re-join rolling
 * through an Elastic Metal pool across successive runs of the fleet program under mocks: each run
 * gets the previous run's `nodes` output; without a kubeconfig every Node counts as Ready.
 */
import { strict as assert } from "node:assert";
import type * as pulumi from "@pulumi/pulumi";
import { type MockRunResult, type RecordedResource, runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { containsSecret, resolveSecrets } from "../../automation/mocks/secretValues";
import { type ScalewayElasticMetalPool, parseFleetSpec } from "../../components/fleet/fleetSpec";
import type { InPlaceRolloutSummary } from "../../components/fleet/rolloutPlan";
import { ElasticMetalNodePool, RETAINED_ELASTIC_METAL_IGNORED_INPUTS } from "../../components/scaleway/elasticMetalNodePool";
import {
  type CurrentElasticMetalMember,
  currentElasticMetalMembers,
  elasticMetalGeneration,
  elasticMetalJoinInputs,
  elasticMetalMembers,
} from "../../components/scaleway/elasticMetalPlan";
import { inPlaceRolloutGeneration } from "../../components/fleet/inPlaceMembers";
import { runProgram } from "../../stacks/fleetProgram";
import { clusterConfig, elasticMetalPoolConfig, rawFleetConfig } from "../support/fleetConfigFixture";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const SERVER = "scaleway:elasticmetal/server:Server";
const UPDATE_DRAIN = "pulumi-nodejs:dynamic/nodefleet:KubernetesNodeUpdateDrain";
const SSH_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAexample\n-----END OPENSSH PRIVATE KEY-----\n";
const POOL = "kura-scw-fr-par";
const NODE_IDS = [0, 1, 2, 3].map((i) => `${POOL}-${i}`);

type Run = MockRunResult<Record<string, unknown>>;
type NodeValues = { nodeId: string; serverType: string; generation: string; joinInputs: string };

async function up(previousNodes: unknown, pool: Record<string, unknown> = {}, k0sVersion = "v1.33.4+k0s.0"): Promise<Run> {
  return runUnderMocks({
    stack: "test",
    config: {
      ...rawFleetConfig({ cluster: clusterConfig({ k0sVersion }), pools: [elasticMetalPoolConfig({ replicas: 4, ...pool })] }),
      "nodefleet:sshPrivateKey": SSH_KEY,
    },
    secretKeys: ["nodefleet:sshPrivateKey"],
    program: () => runProgram({ allowMissingKubeconfig: true, ...(previousNodes !== undefined ? { previousNodes } : {}) }),
  });
}

const plain = <T>(value: unknown) => resolveSecrets(value, true) as T;
const nodesOf = (run: Run) => plain<NodeValues[]>(run.outputs.nodes);
const summaryOf = (run: Run) => plain<InPlaceRolloutSummary[]>(run.outputs.rollout).find((r) => r.pool === POOL)!;
const serverOf = (resources: RecordedResource[], nodeId: string) => {
  const found = resources.find((r) => r.type === SERVER && r.name === `example-${POOL}-${nodeId}`);
  assert.ok(found, `no server for ${nodeId}`);
  return found;
};

describe("ElasticMetalNodePool rolling replacements and re-joins across runs (mock runtime)", function () {
  this.timeout(600_000);

  it("moves one member per run to a new offer (its old server released first), the others keep theirs", async () => {
    const first = await up(undefined);
    let previous: unknown = first.outputs.nodes;
    const perRun: string[][] = [];
    for (let run = 0; run < 6; run++) {
      const next = await up(previous, { offer: "EM-I220E-NVME" });
      const summary = summaryOf(next);
      if (summary.updating.length === 0 && summary.remaining === 0) break;
      perRun.push(summary.updating.map((u) => u.nodeId));
      assert.ok(summary.updating.every((u) => u.change === "replace"));
      const moved = new Set(perRun.flat());
      const nodes = nodesOf(next);
      for (const nodeId of NODE_IDS) {
        const offerNow = nodes.find((n) => n.nodeId === nodeId)!.serverType;
        assert.equal(offerNow, moved.has(nodeId) ? "EM-I220E-NVME" : "EM-B220E-NVME", `${nodeId} reports the offer it runs`);
        // A kept server declares its offer ignored (the engine keeps the state's), and keeps its generation's token.
        const generation = nodes.find((n) => n.nodeId === nodeId)!.generation;
        assert.equal(generation === nodesOf(first)[0].generation, !moved.has(nodeId));
        assert.ok(next.resources.some((r) => r.name === `example-${POOL}-${nodeId}-${generation}-token`));
        assert.ok(serverOf(next.resources, nodeId));
      }
      assert.equal(summary.remaining, NODE_IDS.length - moved.size);
      previous = next.outputs.nodes;
    }
    assert.deepEqual(
      perRun,
      NODE_IDS.map((id) => [id]),
    );
  });

  it("re-joins one member per run on a new k0s version, never replacing a server", async () => {
    const first = await up(undefined);
    const second = await up(first.outputs.nodes, {}, "v1.33.5+k0s.0");
    assert.deepEqual(summaryOf(second).updating, [{ nodeId: `${POOL}-0`, change: "re-join" }]);
    assert.equal(summaryOf(second).remaining, 3);
    const before = nodesOf(first);
    for (const node of nodesOf(second)) {
      const old = before.find((n) => n.nodeId === node.nodeId)!;
      assert.equal(node.generation, old.generation, "no server is replaced");
      assert.equal(node.joinInputs === old.joinInputs, node.nodeId !== `${POOL}-0`, `${node.nodeId}: only the first re-joins`);
    }
  });

  it("refuses a surge (the member keeps its address and Node name) and maxUnavailable 0, naming the field", () => {
    const parse = (rollout: unknown) => () => parseFleetSpec(rawFleetConfig({ pools: [elasticMetalPoolConfig({ rollout })] }));
    assert.throws(
      parse({ maxSurge: 1 }),
      /rollout\.maxSurge: maxSurge must be 0 \(or left out\): an Elastic Metal member keeps its private address/,
    );
    assert.throws(parse({ maxUnavailable: 0 }), /rollout\.maxUnavailable: maxUnavailable must be at least 1/);
  });

  it("drains the member whose turn it is before its server is replaced; a retained member keeps its server, join and offer label", async () => {
    const fleet = parseFleetSpec(rawFleetConfig({ pools: [elasticMetalPoolConfig({ replicas: 3 })] }));
    const { kubeconfig: _k, ...cluster } = fleet.cluster;
    const pool = fleet.pools[0] as ScalewayElasticMetalPool;
    const oldGeneration = elasticMetalGeneration(pool);
    const current: CurrentElasticMetalMember[] = elasticMetalMembers(cluster, pool).map((m) => ({
      nodeId: m.nodeId,
      generation: oldGeneration,
      joinInputs: elasticMetalJoinInputs(cluster, m),
      offer: pool.offer,
      zone: pool.zone,
      ready: true,
    }));
    const wantedPool = { ...pool, os: "ubuntu_noble" };
    const options = new Map<string, pulumi.CustomResourceOptions>();
    const { resources, outputs } = await runUnderMocks({
      stack: "test",
      config: { "nodefleet:sshPrivateKey": SSH_KEY },
      secretKeys: ["nodefleet:sshPrivateKey"],
      program: () => {
        const component = new ElasticMetalNodePool(
          `example-${POOL}`,
          { cluster, pool: { ...wantedPool, offer: "EM-I220E-NVME" }, current, kubeconfig: tokenKubeconfig("t0ken") },
          {
            transformations: [
              (a) => {
                options.set(a.name, a.opts);
                return undefined;
              },
            ],
          },
        );
        return { nodes: component.nodes, rollout: component.rolloutSummary };
      },
    });
    const [first, ...others] = current;
    const wantedGeneration = inPlaceRolloutGeneration({
      generation: elasticMetalGeneration({ ...wantedPool, offer: "EM-I220E-NVME" }),
      joinInputs: first.joinInputs,
    });
    const drains = resources.filter((r) => r.type === UPDATE_DRAIN);
    assert.deepEqual(
      drains.map((d) => d.name),
      [`example-${first.nodeId}-${wantedGeneration}-drain`],
    );
    const dependsOnDrain = (name: string) =>
      ([] as unknown[])
        .concat(options.get(name)?.dependsOn ?? [])
        .some((d) => (d as object).constructor?.name === "KubernetesNodeUpdateDrain");
    assert.ok(dependsOnDrain(`example-${POOL}-${first.nodeId}`), "the server is replaced only after the drain");
    assert.ok(dependsOnDrain(`example-${POOL}-${first.nodeId}-join`));
    assert.deepEqual(options.get(`example-${POOL}-${first.nodeId}`)?.ignoreChanges ?? [], []);
    const metadata = (nodeId: string) =>
      plain<{ labels: Record<string, string>; generation: string }>(
        resources.find((r) => r.name === `example-${POOL}-${nodeId}-node-metadata`)!.inputs,
      );
    assert.equal(metadata(first.nodeId).generation, wantedGeneration, "uncordoned after the join");
    assert.equal(metadata(first.nodeId).labels["node.kubernetes.io/instance-type"], "EM-I220E-NVME");
    for (const member of others) {
      assert.ok(!dependsOnDrain(`example-${POOL}-${member.nodeId}`), `${member.nodeId} is not drained`);
      assert.deepEqual(options.get(`example-${POOL}-${member.nodeId}`)?.ignoreChanges, [...RETAINED_ELASTIC_METAL_IGNORED_INPUTS]);
      assert.deepEqual(options.get(`example-${POOL}-${member.nodeId}-join`)?.ignoreChanges, ["stdin"]);
      assert.ok(
        resources.some((r) => r.name === `example-${POOL}-${member.nodeId}-${oldGeneration}-token`),
        `${member.nodeId} keeps its token`,
      );
      assert.equal(metadata(member.nodeId).labels["node.kubernetes.io/instance-type"], "EM-B220E-NVME", "its Node keeps the offer it runs");
      assert.equal(metadata(member.nodeId).generation, inPlaceRolloutGeneration(member));
    }
    const nodes = plain<NodeValues[]>(outputs.nodes);
    assert.deepEqual(
      nodes.map((n) => n.serverType),
      ["EM-I220E-NVME", "EM-B220E-NVME", "EM-B220E-NVME"],
    );
    assert.deepEqual(plain(outputs.rollout), {
      pool: POOL,
      inPlace: true,
      updating: [{ nodeId: first.nodeId, change: "replace" }],
      remaining: 2,
      waiting: "maxUnavailable 1 reached",
    });
  });

  it("reads the previous run's members, and none from a nodefleet that did not record generations", () => {
    const node = {
      pool: POOL,
      nodeId: `${POOL}-0`,
      hostname: `example-${POOL}-0`,
      generation: "aaaaaa",
      joinInputs: "f".repeat(64),
      serverType: "EM-B220E-NVME",
      location: "fr-par-2",
    };
    const read = {
      nodeId: node.nodeId,
      generation: "aaaaaa",
      joinInputs: "f".repeat(64),
      offer: "EM-B220E-NVME",
      zone: "fr-par-2",
      ready: true,
    };
    assert.deepEqual(currentElasticMetalMembers([node], POOL, new Set([node.hostname])), [{ ...read, memberResources: "dynamic" }]);
    assert.deepEqual(
      currentElasticMetalMembers([{ ...node, memberResources: "plugin" }], POOL, new Set([node.hostname])),
      [{ ...read, memberResources: "plugin" }],
      "a member's recorded flavour is carried to the next run",
    );
    assert.equal(currentElasticMetalMembers([{ ...node, generation: undefined }], POOL, new Set()), undefined);
  });

  it("keeps each member's recorded flavour: one recorded before the plugin keeps its dynamic resources, the others use the pool's provider", async () => {
    const fleet = parseFleetSpec(
      rawFleetConfig({
        pools: [
          elasticMetalPoolConfig({
            replicas: 3,
            localStorageClass: "scw-local-nvme",
            rollout: { maxUnavailable: 3, drainTimeoutSeconds: 120 },
          }),
        ],
      }),
    );
    const { kubeconfig: _k, ...cluster } = fleet.cluster;
    const pool = fleet.pools[0] as ScalewayElasticMetalPool;
    const [earlier, recorded, added] = elasticMetalMembers(cluster, pool);
    const running = (m: typeof earlier) => ({
      nodeId: m!.nodeId,
      generation: elasticMetalGeneration(pool),
      joinInputs: elasticMetalJoinInputs(cluster, m!),
      offer: pool.offer,
      zone: pool.zone,
      ready: true,
    });
    // No memberResources: recorded by a nodefleet before the plugin, so `dynamic`; one recorded `plugin`
    // (before the plugin's token); the added one is new (`plugin-all`).
    const current: CurrentElasticMetalMember[] = [running(earlier), { ...running(recorded), memberResources: "plugin" }];
    const options = new Map<string, pulumi.CustomResourceOptions>();
    const { resources, outputs } = await runUnderMocks({
      stack: "test",
      config: { "nodefleet:sshPrivateKey": SSH_KEY },
      secretKeys: ["nodefleet:sshPrivateKey"],
      program: () => {
        // A new k0s version re-joins both running members this run (maxUnavailable 3), each drained first.
        const component = new ElasticMetalNodePool(
          `example-${POOL}`,
          { cluster: { ...cluster, k0sVersion: "v1.33.5+k0s.0" }, pool, current, kubeconfig: tokenKubeconfig("t0ken") },
          {
            transformations: [
              (a) => {
                options.set(a.name, a.opts);
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
    const clusterSide = ["KubernetesNodeRemoval", "KubernetesNodeUpdateDrain", "KubernetesNodeMetadata", "NodeLocalPvcRemoval"]
      .map((t) => DYNAMIC + t)
      .concat(["NodeRemoval", "NodeUpdateDrain", "NodeMetadata", "NodeLocalPvcRemoval", "NodeDrain"].map((t) => PLUGIN + t));
    const of = (nodeId: string) => resources.filter((r) => clusterSide.includes(r.type) && new RegExp(`(^|-)${nodeId}(-|$)`).test(r.name));
    const typesOf = (nodeId: string) =>
      of(nodeId)
        .map((r) => r.type)
        .sort();
    assert.deepEqual(typesOf(earlier!.nodeId), [
      `${DYNAMIC}KubernetesNodeMetadata`,
      `${DYNAMIC}KubernetesNodeRemoval`,
      `${DYNAMIC}KubernetesNodeUpdateDrain`,
      `${DYNAMIC}NodeLocalPvcRemoval`,
    ]);
    for (const r of of(earlier!.nodeId)) assert.ok(containsSecret(r.inputs.credentials), `${r.name} keeps its own credentials, secret`);
    // The drain before removal: the plugin's members get it (a `plugin` member only a create, with
    // the provider it already uses); a `dynamic` member keeps what it was created with, none.
    assert.deepEqual(typesOf(recorded!.nodeId), [
      `${PLUGIN}NodeDrain`,
      `${PLUGIN}NodeLocalPvcRemoval`,
      `${PLUGIN}NodeMetadata`,
      `${PLUGIN}NodeRemoval`,
      `${PLUGIN}NodeUpdateDrain`,
    ]);
    assert.deepEqual(typesOf(added!.nodeId), [
      `${PLUGIN}NodeDrain`,
      `${PLUGIN}NodeLocalPvcRemoval`,
      `${PLUGIN}NodeMetadata`,
      `${PLUGIN}NodeRemoval`,
    ]);
    for (const r of [...of(recorded!.nodeId), ...of(added!.nodeId)]) {
      assert.match(String(r.provider), new RegExp(`pulumi:providers:nodefleet::example-${POOL}-cluster-access::`), r.name);
      assert.equal(r.inputs.credentials, undefined, `${r.name} carries no credentials`);
    }
    assert.equal(resources.filter((r) => r.type === "pulumi:providers:nodefleet").length, 1, "one provider for the pool");
    const dependsOn = (name: string, constructor: string) =>
      ([] as unknown[]).concat(options.get(name)?.dependsOn ?? []).some((d) => (d as object).constructor?.name === constructor);
    assert.ok(dependsOn(`example-${POOL}-${earlier!.nodeId}-join`, "KubernetesNodeUpdateDrain"));
    assert.ok(dependsOn(`example-${POOL}-${recorded!.nodeId}-join`, "NodeUpdateDrain"), "the plugin's drain gates the re-join too");
    for (const member of [recorded!, added!]) {
      const drain = resources.find((r) => r.type === `${PLUGIN}NodeDrain` && r.name.endsWith(`${member.nodeId}-removal-drain`))!;
      assert.deepEqual(plain(drain.inputs), { nodeName: member.hostname, timeoutSeconds: 120 }, "bounded by the pool's drain timeout");
      const deps = ([] as unknown[]).concat(options.get(drain.name)?.dependsOn ?? []) as Array<{ __name?: string }>;
      assert.deepEqual(
        deps.map((d) => d.__name),
        [`example-${POOL}-${member.nodeId}`],
        "it depends on the server, so a removal drains before the server is deleted",
      );
    }
    assert.deepEqual(
      plain<Array<{ memberResources: string }>>(outputs.nodes).map((n) => n.memberResources),
      ["dynamic", "plugin", "plugin-all"],
      "each member's flavour is recorded for the next run",
    );
    // The recorded members keep the token component they were created with (a token is per
    // generation: the next server of the member gets the new one); the new member gets the plugin's.
    const tokenOf = (nodeId: string) =>
      resources.filter((r) => r.name.startsWith(`example-${POOL}-${nodeId}-`) && r.name.endsWith("-token"));
    for (const nodeId of [earlier!.nodeId, recorded!.nodeId])
      assert.deepEqual(
        tokenOf(nodeId).map((r) => r.type),
        ["nodefleet:kubernetes:BootstrapToken"],
        nodeId,
      );
    const [token] = tokenOf(added!.nodeId);
    assert.equal(token?.type, "nodefleet:kubernetes:NodeBootstrapToken");
    assert.match(String(token?.provider), new RegExp(`pulumi:providers:nodefleet::example-${POOL}-cluster-access::`));
  });

  it("keeps the dynamic resources of a pool an earlier nodefleet recorded without generations, and records plugin members on a first run", async () => {
    const flavours = (run: Run) => nodesOf(run).map((n) => (n as NodeValues & { memberResources?: string }).memberResources);
    const first = await up(undefined);
    assert.deepEqual(
      flavours(first),
      NODE_IDS.map(() => "plugin-all"),
    );
    const unrecorded = nodesOf(first).map(({ generation: _g, ...n }) => ({ ...n, memberResources: undefined }));
    assert.deepEqual(
      flavours(await up(unrecorded)),
      NODE_IDS.map(() => "dynamic"),
      "members the previous run could not describe are taken as created before the plugin",
    );
    assert.deepEqual(
      flavours(await up(nodesOf(first))),
      NODE_IDS.map(() => "plugin-all"),
      "recorded plugin members stay plugin",
    );
  });
});
