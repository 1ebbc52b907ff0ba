/**
 * The scaling API's stack program (stacks/autoscaledProgram.ts) under Pulumi's mock runtime: it
 * declares only the autoscaled members rendered from their frozen snapshots (servers, tokens,
 * placement groups), looks the network and firewall up instead of declaring them, registers the
 * members with karpenter.sh/unregistered:NoExecute and keeps restricted labels out of the kubelet.
 */
import { memberOutputs } from "../../automation/reconciler/runOutcome";
import { strict as assert } from "node:assert";
import { freeSlot } from "../../automation/api/clusterService";
import { allocatable, nodeCapacity, nodeOverheadFor } from "../../automation/catalog/instanceTypes";
import { findServerType, shippedCatalog } from "../../automation/catalog/serverTypes";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { deterministicOutputs } from "../../automation/mocks/deterministicOutputs";
import { poolTemplate, templateHash } from "../../automation/reconciler/memberSnapshot";
import type { MemberSnapshot } from "../../automation/store/claimSnapshot";
import { configValues } from "../../automation/stackConfigFile";
import { parseFleetSpec, type HcloudAutoscaledPool } from "../../components/fleet/fleetSpec";
import { partitionKubeletLabels } from "../../components/fleet/kubeletLabels";
import { assertClusterOwned, runProgram } from "../../stacks/autoscaledProgram";
import { exampleConfig } from "../support/apiHarness";

function snapshotFor(
  config: Record<string, unknown>,
  serverType: string,
  slot: number,
  requestLabels: Record<string, string> = {},
): MemberSnapshot {
  const spec = parseFleetSpec(config);
  const pool = spec.pools.find((p) => p.name === "hel1-burst") as HcloudAutoscaledPool;
  const template = poolTemplate(spec.cluster, pool);
  const type = findServerType(shippedCatalog(), serverType)!;
  const capacity = nodeCapacity(type, spec.cluster.kubelet);
  return {
    template,
    serverType,
    location: pool.location,
    requestLabels,
    kubeletLabels: partitionKubeletLabels(requestLabels).accepted,
    requestTaints: [],
    capacity,
    allocatable: allocatable(capacity, nodeOverheadFor(type, spec.cluster.kubelet)),
    templateHash: templateHash(template, serverType),
    placementSlot: slot,
  };
}

async function runApiProgram(
  config: Record<string, unknown>,
  members: Array<{ nodeId: string; snapshot: MemberSnapshot }>,
  owner = "example",
) {
  return runUnderMocks({
    stack: "example-api",
    config,
    call: (args) => ({ ...args.inputs, id: args.token.includes("getNetwork") ? "4711" : "815", labels: { "nodefleet.io/cluster": owner } }),
    program: () =>
      runProgram({ clusterId: "example", allowMissingKubeconfig: true, members: members.map((m) => ({ ...m, pool: "hel1-burst" })) }),
    newResource: deterministicOutputs,
  });
}

describe("the API stack's program", () => {
  it("declares only the members, finds network and firewall by name and label, and taints them unregistered", async () => {
    const config = configValues(exampleConfig());
    const members = [
      {
        nodeId: "k000000000001",
        snapshot: snapshotFor(config, "cpx21", 0, {
          "karpenter.sh/nodepool": "default",
          "kubernetes.io/team": "x",
          "node-role.kubernetes.io/burst": "",
        }),
      },
      { nodeId: "k000000000002", snapshot: snapshotFor(config, "cpx31", 1) },
    ];
    const result = await runApiProgram(config, members);
    const types = new Set(result.resources.map((r) => r.type));
    assert.ok(!types.has("hcloud:index/network:Network") && !types.has("hcloud:index/firewall:Firewall"), "git owns network and firewall");
    const servers = result.resources.filter((r) => r.type === "hcloud:index/server:Server");
    assert.equal(servers.length, 2);
    assert.ok(types.has("hcloud:index/placementGroup:PlacementGroup"));
    const lookups = result.calls.filter((c) => /getNetwork|getFirewall/.test(c.token));
    assert.equal(lookups.length, 2);
    // By name only: the provider ignores with_selector next to a name, so the label is checked on the answer.
    for (const call of lookups) assert.equal(call.inputs.withSelector, undefined);
    const first = servers.find((s) => (s.inputs.labels as Record<string, string>)["nodefleet.io/node"] === "k000000000001")!;
    assert.equal(first.inputs.serverType, "cpx21");
    assert.deepEqual(first.inputs.firewallIds, [815]);
    assert.equal((first.inputs.networks as Array<{ networkId: number }>)[0]!.networkId, 4711);
    const userData = String(resolveSecrets(first.inputs.userData, true));
    // In the worker's --taints argument, next to the pool's own taint.
    const taintsArg = /--taints '([^'\n]*)'/.exec(userData)?.[1] ?? /--taints (\S+)/.exec(userData)?.[1];
    assert.ok(taintsArg, "the worker registers with taints");
    assert.deepEqual(taintsArg.split(",").sort(), ["karpenter.sh/unregistered:NoExecute", "workload=batch:NoSchedule"]);
    assert.match(userData, /karpenter\.sh\/nodepool=default/);
    assert.doesNotMatch(userData, /kubernetes\.io\/team/);
    assert.doesNotMatch(userData, /node-role\.kubernetes\.io/);
    const memberRows = memberOutputs(result.outputs);
    assert.deepEqual(Object.keys(memberRows).sort(), ["k000000000001", "k000000000002"]);
    assert.ok(memberRows.k000000000001!.serverId);
  });

  it("refuses a network or firewall of the right name that is not labelled as this cluster's", async () => {
    const config = configValues(exampleConfig());
    const members = [{ nodeId: "k000000000001", snapshot: snapshotFor(config, "cpx21", 0) }];
    await assert.rejects(
      runApiProgram(config, members, "other-cluster"),
      /the Hetzner network .* is not labelled nodefleet\.io\/cluster=example \(it belongs to other-cluster\)/,
    );
    assert.throws(
      () => assertClusterOwned("firewall", "fw", {}, "example"),
      /firewall fw is not labelled nodefleet\.io\/cluster=example \(no such label\)/,
    );
    assert.doesNotThrow(() => assertClusterOwned("firewall", "fw", { "nodefleet.io/cluster": "example" }, "example"));
  });

  it("renders members from their snapshots: a changed template in git does not change existing servers", async () => {
    const config = configValues(exampleConfig());
    const members = [{ nodeId: "k000000000001", snapshot: snapshotFor(config, "cpx21", 0) }];
    const before = await runApiProgram(config, members);
    const changed = structuredClone(config) as Record<string, any>;
    changed["nodefleet:pools"].find((p: { name: string }) => p.name === "hel1-burst").image = "ubuntu-22.04";
    changed["nodefleet:cluster"].k0sVersion = "v1.34.1+k0s.0";
    const after = await runApiProgram(changed, members);
    const server = (r: typeof before) => r.resources.find((x) => x.type === "hcloud:index/server:Server")!;
    assert.equal(server(after).name, server(before).name, "same generation: no replacement");
    assert.equal(server(after).inputs.image, "ubuntu-24.04");
    assert.equal(resolveSecrets(server(after).inputs.userData, true), resolveSecrets(server(before).inputs.userData, true));
    // Karpenter matches the Node by providerID; its name is the (never changing) server name.
    const userData = String(resolveSecrets(server(after).inputs.userData, true));
    assert.ok(userData.includes(`--hostname-override=${server(after).name} `), "the Node is named after the server generation");
    assert.match(userData, /--provider-id=[a-z]+:\/\/\/example\/k000000000001 /);
  });

  it("boots a member of a pool with images resolved per architecture from its own architecture's image", async () => {
    const config = configValues(exampleConfig());
    const snapshot = snapshotFor(config, "cpx21", 0);
    const template = { ...snapshot.template, imagesByArchitecture: { x86: "4001", arm: "4002" } };
    const run = await runApiProgram(config, [{ nodeId: "k000000000001", snapshot: { ...snapshot, template } }]);
    const server = run.resources.find((x) => x.type === "hcloud:index/server:Server")!;
    assert.equal(server.inputs.image, "4001", "cpx21 is x86: the x86 snapshot, not the pool's image name");
  });

  it("gives claims admitted now a RandomPassword token and keeps an earlier claim's RandomString", async () => {
    const config = configValues(exampleConfig());
    const run = await runApiProgram(config, [
      { nodeId: "k000000000001", snapshot: { ...snapshotFor(config, "cpx21", 0), bootstrapTokenSecret: "random-password" } },
      // Admitted by an earlier nodefleet: its machine may still be joining with the token it has.
      { nodeId: "k000000000002", snapshot: snapshotFor(config, "cpx21", 1) },
    ]);
    const tokenResources = run.resources
      .filter((r) => r.type.startsWith("random:") && !r.name.endsWith("-token-id"))
      .map((r) => [r.type, r.name.replace(/-[a-z0-9]{6}-token/, "-token")]);
    assert.deepEqual(tokenResources, [
      ["random:index/randomPassword:RandomPassword", "example-k000000000001-token-password"],
      ["random:index/randomString:RandomString", "example-k000000000002-token-secret"],
    ]);
  });

  it("never repeats a (key, effect) in the kubelet's taints: request over pool, and the unregistered taint once", async () => {
    const config = configValues(exampleConfig());
    const snapshot = {
      ...snapshotFor(config, "cpx21", 0),
      requestTaints: [
        { key: "workload", value: "ci", effect: "NoSchedule" as const },
        { key: "karpenter.sh/unregistered", effect: "NoExecute" as const },
      ],
    };
    const result = await runApiProgram(config, [{ nodeId: "k000000000001", snapshot }]);
    const server = result.resources.find((r) => r.type === "hcloud:index/server:Server")!;
    const userData = String(resolveSecrets(server.inputs.userData, true));
    const taintsArg = /--taints '([^'\n]*)'/.exec(userData)?.[1] ?? /--taints (\S+)/.exec(userData)?.[1];
    assert.deepEqual(taintsArg!.split(",").sort(), ["karpenter.sh/unregistered:NoExecute", "workload=ci:NoSchedule"]);
  });

  it("declares nothing and looks nothing up without members", async () => {
    const result = await runApiProgram(configValues(exampleConfig()), []);
    assert.equal(result.resources.filter((r) => r.custom).length, 0);
    assert.equal(result.calls.length, 0);
  });

  it("gives each member the smallest free placement slot", () => {
    assert.equal(freeSlot([]), 0);
    assert.equal(freeSlot([0, 1, 3]), 2);
    assert.equal(freeSlot([1, 2]), 0);
  });
});
