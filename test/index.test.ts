import { strict as assert } from "node:assert";
import * as pulumi from "@pulumi/pulumi";
import { deterministicOutputs } from "../automation/mocks/deterministicOutputs";
import { type RecordedResource, runUnderMocks } from "../automation/mocks/runUnderMocks";
import { resolveSecrets } from "../automation/mocks/secretValues";
import { clusterFirewallRules } from "../components/fleet/firewallRules";
import { parseFleetSpec } from "../components/fleet/fleetSpec";
import {
  elasticMetalPoolConfig,
  hcloudAutoscaledPoolConfig,
  hcloudStaticPoolConfig,
  rawFleetConfig,
  runFleetProgramUnderMocks,
  stackFileConfig,
} from "./support/fleetConfigFixture";

const ofType = (resources: RecordedResource[], type: string) => resources.filter((r) => r.type === type);
const one = (resources: RecordedResource[], type: string) => {
  const found = ofType(resources, type);
  assert.equal(found.length, 1, `exactly one ${type}`);
  return found[0];
};
const plain = (value: unknown) => resolveSecrets(value, true) as Record<string, unknown>;

describe("Fleet under mocks", function () {
  this.timeout(60_000);

  describe("the example stack (stacks/Pulumi.example.yaml)", () => {
    let resources: RecordedResource[];
    let outputs: Record<string, unknown>;
    before(async () => {
      const run = await runFleetProgramUnderMocks(stackFileConfig("example"));
      resources = run.resources;
      outputs = run.outputs as Record<string, unknown>;
    });

    it("declares the component tree: Fleet, network, firewall, one pool per static hcloud pool", () => {
      assert.equal(one(resources, "nodefleet:index:Fleet").name, "example");
      assert.equal(one(resources, "nodefleet:hcloud:ClusterNetwork").name, "example-network");
      assert.equal(one(resources, "nodefleet:hcloud:ClusterFirewall").name, "example-firewall");
      assert.deepEqual(
        ofType(resources, "nodefleet:hcloud:NodePool").map((p) => p.name),
        ["example-hel1-general"],
        "the autoscaled pool's members belong to the scaling API's stack",
      );
      assert.equal(ofType(resources, "hcloud:index/server:Server").length, 3);
    });

    it("declares the network and its cloud subnet, labelled with the cluster", () => {
      const network = one(resources, "hcloud:index/network:Network");
      assert.equal(network.name, "example-network-network");
      assert.deepEqual(plain(network.inputs), {
        name: "example-network",
        ipRange: "10.0.0.0/16",
        labels: { "nodefleet.io/cluster": "example" },
      });
      const subnet = one(resources, "hcloud:index/networkSubnet:NetworkSubnet");
      assert.equal(subnet.name, "example-network-subnet");
      assert.deepEqual(plain(subnet.inputs), {
        networkId: Number(network.id),
        type: "cloud",
        networkZone: "eu-central",
        ipRange: "10.0.1.0/24",
      });
    });

    it("declares the firewall with the public rules, labelled with the cluster", () => {
      const firewall = one(resources, "hcloud:index/firewall:Firewall");
      const spec = parseFleetSpec(stackFileConfig("example"));
      assert.equal(firewall.inputs.name, "example-nodes");
      assert.deepEqual(firewall.inputs.labels, { "nodefleet.io/cluster": "example" });
      assert.deepEqual(plain(firewall.inputs).rules, JSON.parse(JSON.stringify(clusterFirewallRules(spec.cluster, spec.firewall))));
      const rules = firewall.inputs.rules as Array<Record<string, unknown>>;
      assert.ok(rules.some((r) => r.port === "10250" && JSON.stringify(r.sourceIps) === JSON.stringify(["203.0.113.10/32"])));
      assert.ok(!rules.some((r) => r.port === "30000-32767"), "nodePortSources is empty in the example");
    });

    it("declares the Kubernetes provider with an empty kubeconfig for render and simulation", () => {
      const provider = one(resources, "pulumi:providers:kubernetes");
      assert.equal(provider.name, "example-kubernetes");
      assert.equal(plain({ k: provider.inputs.kubeconfig }).k, "");
    });

    it("returns the stack outputs", () => {
      const network = one(resources, "hcloud:index/network:Network");
      const firewall = one(resources, "hcloud:index/firewall:Firewall");
      assert.equal(outputs.clusterId, "example");
      assert.equal(outputs.networkId, Number(network.id));
      assert.equal(outputs.firewallId, Number(firewall.id));
      const nodes = outputs.nodes as Array<Record<string, unknown>>;
      assert.deepEqual(
        nodes.map((n) => n.nodeId),
        ["hel1-general-0", "hel1-general-1", "hel1-general-2", "kura-scw-fr-par-0"],
        "every static member of every pool (the Elastic Metal pool's too); autoscaled members belong to the API's stack",
      );
      for (const key of ["nodeId", "providerID", "serverId", "ipv4", "pool", "serverType", "location"]) {
        for (const node of nodes) assert.ok(node[key] !== undefined, `node output ${key}`);
      }
    });
  });

  it("the pulumi entry point (stacks/index.ts) fails without a kubeconfig with a RunError naming the key and the command", async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const entry = require("../stacks/index") as () => Promise<Record<string, unknown>>;
    let error: unknown;
    const run = await runUnderMocks({
      stack: "test",
      config: rawFleetConfig(),
      program: () => entry().catch((e: unknown) => ((error = e), {})),
    });
    assert.ok(pulumi.RunError.isInstance(error), `a RunError (printed without a stack trace), got ${String(error)}`);
    assert.match(
      (error as Error).message,
      /nodefleet:cluster\.kubeconfig: .*pulumi config set --secret --path 'nodefleet:cluster\.kubeconfig'/,
    );
    assert.equal(run.resources.length, 0, "nothing is registered");
  });

  it("uses network.name and nodePortSources from config", async () => {
    const { resources } = await runFleetProgramUnderMocks(
      rawFleetConfig({ network: { name: "shared-net" }, firewall: { nodePortSources: ["192.0.2.0/24"] } }),
    );
    assert.equal(one(resources, "hcloud:index/network:Network").inputs.name, "shared-net");
    const rules = one(resources, "hcloud:index/firewall:Firewall").inputs.rules as Array<Record<string, unknown>>;
    assert.deepEqual(rules.find((r) => r.port === "30000-32767")?.sourceIps, ["192.0.2.0/24"]);
  });

  it("declares one pool component per static hcloud pool and none for autoscaled pools", async () => {
    const { resources, outputs } = await runFleetProgramUnderMocks(
      rawFleetConfig({
        pools: [
          hcloudStaticPoolConfig({ name: "a", replicas: 2 }),
          hcloudAutoscaledPoolConfig({ name: "b" }),
          hcloudStaticPoolConfig({ name: "c", replicas: undefined, nodes: ["x", "y"], location: "fsn1" }),
        ],
      }),
    );
    assert.deepEqual(
      ofType(resources, "nodefleet:hcloud:NodePool").map((p) => p.name),
      ["example-a", "example-c"],
    );
    const servers = ofType(resources, "hcloud:index/server:Server");
    assert.deepEqual(
      servers.map((s) => s.name.replace(/-[a-z0-9]{6}$/, "")),
      ["example-a-0", "example-a-1", "example-c-x", "example-c-y"],
    );
    assert.deepEqual(
      servers.map((s) => s.inputs.location),
      ["hel1", "hel1", "fsn1", "fsn1"],
    );
    assert.equal((outputs.nodes as unknown[]).length, 4);
  });

  it("declares the teardown guard for the scaling API's servers: the cluster's servers outside the static pools", async () => {
    const guardOf = async (pools: unknown[]) => {
      const guards = ofType((await runFleetProgramUnderMocks(rawFleetConfig({ pools }))).resources, "command:local:Command");
      assert.equal(guards.length, 1);
      assert.equal(plain(guards[0]!.inputs).create, undefined, "the guard does nothing at create");
      return plain(plain(guards[0]!.inputs).environment as Record<string, unknown>).NODEFLEET_API_MEMBERS;
    };
    const both = [
      hcloudStaticPoolConfig({ name: "b", replicas: 1 }),
      hcloudStaticPoolConfig({ name: "a", replicas: 1 }),
      hcloudAutoscaledPoolConfig({ name: "c" }),
    ];
    assert.equal(await guardOf(both), "nodefleet.io/cluster=example,nodefleet.io/pool notin (a,b)");
    // Without autoscaled pools it stays declared: dropping them must not delete it mid-update.
    assert.equal(
      await guardOf([hcloudStaticPoolConfig({ name: "a", replicas: 1 })]),
      "nodefleet.io/cluster=example,nodefleet.io/pool notin (a)",
    );
    assert.equal(await guardOf([hcloudAutoscaledPoolConfig({ name: "c" })]), "nodefleet.io/cluster=example");
  });

  it("leaves Elastic Metal pools to their own component (no hcloud servers for them)", async () => {
    const { resources } = await runFleetProgramUnderMocks(rawFleetConfig({ pools: [elasticMetalPoolConfig()] }));
    assert.equal(ofType(resources, "hcloud:index/server:Server").length, 0);
  });

  it("reports each node's private address from the server's network attachment", async () => {
    const newResource = (args: pulumi.runtime.MockResourceArgs) => {
      const result = deterministicOutputs(args);
      if (args.type !== "hcloud:index/server:Server") return result;
      const networks = (args.inputs.networks as Array<Record<string, unknown>>).map((n, i) => ({ ...n, ip: `10.0.1.${i + 10}` }));
      return { id: result.id, state: { ...result.state, networks } };
    };
    const { outputs } = await runFleetProgramUnderMocks(rawFleetConfig(), { newResource });
    for (const node of outputs.nodes as Array<Record<string, unknown>>) assert.equal(node.privateIpv4, "10.0.1.10");
  });
});
