/**
 * Changes that reach the running members of an Elastic Metal pool of three servers, across two runs
 * of the pool under mocks (the second gets the first run's `nodes`, every Node Ready): what the
 * engine would step between them (test/support/mockEngineSteps.ts). Labels and taints are a Node
 * patch and nothing runs on the machines; a cluster-firewall change reloads only the host firewall;
 * a version re-joins, and a kubelet-config re-push (kubeadm) restarts kubelets, within maxUnavailable.
 */
import { strict as assert } from "node:assert";
import type * as pulumi from "@pulumi/pulumi";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { type FirewallSpec, type ScalewayElasticMetalPool, firewallSchema, parseFleetSpec } from "../../components/fleet/fleetSpec";
import type { InPlaceRolloutSummary } from "../../components/fleet/rolloutPlan";
import { RECORD_ONLY_UPDATE } from "../../components/bootstrap/sshConnection";
import { ElasticMetalNodePool } from "../../components/scaleway/elasticMetalNodePool";
import { currentElasticMetalMembers } from "../../components/scaleway/elasticMetalPlan";
import { clusterConfig, elasticMetalPoolConfig, rawFleetConfig } from "../support/fleetConfigFixture";
import {
  ADDED_LABELS,
  OPENED_NODE_PORTS,
  type SteppedMockRun,
  assertOnlyHostFirewallReloads,
  assertOnlyNodePatches,
  declaredInputs,
  engineSteps,
  reportedNodes,
  runPoolRecordingIgnoreChanges,
} from "../support/mockEngineSteps";
import { tokenKubeconfig } from "../support/tokenKubeconfig";

const POOL = "kura-scw-fr-par";
const NODE_IDS = [0, 1, 2].map((i) => `${POOL}-${i}`);
const PREFIX = `example-${POOL}-`;
const MEMBERS = NODE_IDS.map((id) => `${PREFIX}${id}`);
const KUBEADM = { kind: "kubeadm", kubernetesVersion: "v1.33.4", k0sVersion: undefined };

interface Change {
  readonly cluster?: Record<string, unknown>;
  readonly pool?: Record<string, unknown>;
  readonly firewall?: Partial<FirewallSpec>;
}
type Outputs = { nodes: Array<Record<string, unknown>>; rollout: InPlaceRolloutSummary };
type Run = SteppedMockRun<Outputs>;

/** One run of the pool as `change` wants it, starting from `previous` (a run's outputs) when given. */
async function up(change: Change, previous?: Run, options: Map<string, pulumi.CustomResourceOptions> = new Map()): Promise<Run> {
  const spec = parseFleetSpec(
    rawFleetConfig({ cluster: clusterConfig(change.cluster), pools: [elasticMetalPoolConfig({ replicas: 3, ...change.pool })] }),
  );
  const { kubeconfig: _k, ...cluster } = spec.cluster;
  const reported = previous ? reportedNodes(previous) : undefined;
  const current = reported ? currentElasticMetalMembers(reported.nodes, POOL, reported.ready) : undefined;
  return runPoolRecordingIgnoreChanges(() => {
    const pool = new ElasticMetalNodePool(
      `example-${POOL}`,
      {
        cluster,
        pool: spec.pools[0] as ScalewayElasticMetalPool,
        kubeconfig: tokenKubeconfig("t0ken"),
        firewall: firewallSchema.parse(change.firewall ?? {}),
        ...(current ? { current } : {}),
      },
      {
        transformations: [
          (a) => {
            options.set(a.name, a.opts);
            return undefined;
          },
        ],
      },
    );
    return { nodes: pool.nodes, rollout: pool.rolloutSummary } as unknown as pulumi.Input<Outputs>;
  }) as Promise<Run>;
}

const inputsOf = declaredInputs;
const dependsOnNames = (options: Map<string, pulumi.CustomResourceOptions>, name: string) =>
  ([] as unknown[]).concat(options.get(name)?.dependsOn ?? []).map((d) => (d as { __name?: string }).__name);

describe("ElasticMetalNodePool changes that reach running members (mock runtime, engine steps between runs)", function () {
  this.timeout(600_000);

  for (const [path, offer] of [
    ["SSH self-join", {}],
    ["cloud-init", { offer: "EM-A610R-NVME", os: "ubuntu_noble" }],
  ] as const) {
    it(`a label or taint change patches every Node and runs no join, no server change, no drain (${path})`, async () => {
      const first = await up({ pool: offer });
      assertOnlyNodePatches(first, await up({ pool: { ...offer, ...ADDED_LABELS } }, first), MEMBERS);
    });
  }

  it("a cluster-firewall change reloads only the host firewall, on every member at once, and restarts nothing", async () => {
    const first = await up({});
    assertOnlyHostFirewallReloads(first, await up({ firewall: OPENED_NODE_PORTS }, first), MEMBERS);
  });

  it("a version change still re-joins one member per run (default maxUnavailable 1), drained first", async () => {
    const first = await up({});
    const upgraded = await up({ cluster: { k0sVersion: "v1.33.5+k0s.0" } }, first);
    const steps = engineSteps(first, upgraded);
    assert.deepEqual(
      steps.filter((s) => s.endsWith("-join")),
      [`replace ${PREFIX}${NODE_IDS[0]}-join`],
    );
    assert.deepEqual(
      steps.filter((s) => s.includes("-drain")).map((s) => s.split(" ")[0]),
      ["create"],
    );
    assert.deepEqual(
      steps.filter((s) => /-(hostkey|vlan|host-firewall)$/.test(s) || s.endsWith(`${PREFIX}${NODE_IDS[0]}`)),
      [],
      "no server change",
    );
    assert.deepEqual(upgraded.outputs.rollout.updating, [{ nodeId: NODE_IDS[0], change: "re-join" }]);
    assert.equal(upgraded.outputs.rollout.remaining, 2);
  });

  it("a kubelet-config change (kubeadm) re-pushes one member per run, drained first and uncordoned after the re-push", async () => {
    const first = await up({ cluster: KUBEADM });
    const options = new Map<string, pulumi.CustomResourceOptions>();
    const tuned = await up({ cluster: { ...KUBEADM, kubelet: { maxPods: 200 } } }, first, options);
    const steps = engineSteps(first, tuned);
    assert.deepEqual(
      steps.filter((s) => s.endsWith("-kubelet-config")),
      [`replace ${PREFIX}${NODE_IDS[0]}-kubelet-config`],
      steps.join(", "),
    );
    assert.deepEqual(
      steps.filter((s) => /^replace .*-join$/.test(s)),
      [],
      "no re-join for a kubelet config",
    );
    // Its join script holds the config too: the update records it and runs the no-op.
    assert.equal(inputsOf(tuned, `${PREFIX}${NODE_IDS[0]}-join`).update, RECORD_ONLY_UPDATE);
    assert.equal(steps.filter((s) => s.includes("-drain")).length, 1, "the member is drained first");
    assert.deepEqual(tuned.outputs.rollout.updating, [{ nodeId: NODE_IDS[0], change: "kubelet-config" }]);
    assert.equal(tuned.outputs.rollout.remaining, 2);
    assert.equal(tuned.outputs.rollout.waiting, "maxUnavailable 1 reached");
    assert.match(String(inputsOf(tuned, `${PREFIX}${NODE_IDS[0]}-kubelet-config`).stdin), /maxPods: 200/);
    const repush = `${PREFIX}${NODE_IDS[0]}-kubelet-config`;
    assert.ok(
      dependsOnNames(options, repush).some((n) => n?.endsWith("-join")),
      "the re-push runs after the join, which waits for the drain",
    );
    assert.ok(dependsOnNames(options, `${PREFIX}${NODE_IDS[0]}-node-metadata`).includes(repush), "the uncordon waits for the re-push");
    const nodes = resolveSecrets(tuned.outputs.nodes, true) as Array<{ nodeId: string; kubeletConfigHash: string }>;
    const before = resolveSecrets(first.outputs.nodes, true) as Array<{ nodeId: string; kubeletConfigHash: string }>;
    assert.deepEqual(
      nodes.map((n, i) => n.kubeletConfigHash === before[i]!.kubeletConfigHash),
      [false, true, true],
      "the members the rollout has not reached report the config they run",
    );
  });
});
