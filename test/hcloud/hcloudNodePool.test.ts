import { strict as assert } from "node:assert";
import * as pulumi from "@pulumi/pulumi";
import { parse } from "yaml";
import type { RecordedResource } from "../../automation/mocks/runUnderMocks";
import { runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { isWrappedSecret, resolveSecrets } from "../../automation/mocks/secretValues";
import { FleetSpecError, parseFleetSpec, type HcloudStaticPool } from "../../components/fleet/fleetSpec";
import { HcloudNodePool } from "../../components/hcloud/hcloudNodePool";
import { type HcloudPoolMember, planHcloudServers, staticHcloudMembers } from "../../components/hcloud/hcloudServerPlan";
import { decodeK0sJoinToken } from "../../components/bootstrap/k0sJoinToken";
import { K0S_TOKEN_FILE } from "../../components/bootstrap/k0sWorkerCloudConfig";
import { runProgram } from "../../stacks/fleetProgram";
import { assertCloudInitSchemaValid } from "../support/externalLinters";
import { tokenKubeconfig } from "../support/tokenKubeconfig";
import {
  hcloudAutoscaledPoolConfig,
  hcloudStaticPoolConfig,
  rawFleetConfig,
  runFleetProgramUnderMocks,
} from "../support/fleetConfigFixture";

const SERVER = "hcloud:index/server:Server";
const PLACEMENT_GROUP = "hcloud:index/placementGroup:PlacementGroup";
const TOKEN = "nodefleet:kubernetes:NodeBootstrapToken";

const ofType = (resources: RecordedResource[], type: string) => resources.filter((r) => r.type === type);
const plain = (value: unknown) => resolveSecrets(value, true) as Record<string, unknown>;
const userDataOf = (server: RecordedResource) => plain({ u: server.inputs.userData }).u as string;

/** The bootstrap token inside a k0s cloud-config: the token file holds the k0s join token (a kubeconfig). */
function bootstrapTokenIn(userData: string): string {
  const doc = parse(userData) as { write_files: Array<{ path: string; content: string }> };
  const file = doc.write_files.find((f) => f.path === K0S_TOKEN_FILE);
  assert.ok(file, "the cloud-config writes the join token file");
  const kubeconfig = parse(decodeK0sJoinToken(file.content)) as { users: Array<{ user: { token: string } }> };
  return kubeconfig.users[0].user.token;
}

function staticOnly(replicas: number, pool: Record<string, unknown> = {}) {
  return rawFleetConfig({ pools: [hcloudStaticPoolConfig({ replicas, ...pool })] });
}

describe("HcloudNodePool under mocks", function () {
  this.timeout(120_000);

  for (const count of [0, 1, 10, 11, 23]) {
    it(`declares ${count} server(s), tokens and ${Math.ceil(count / 10)} spread group(s) of at most 10`, async () => {
      const { resources } = await runFleetProgramUnderMocks(staticOnly(count));
      const servers = ofType(resources, SERVER);
      const groups = ofType(resources, PLACEMENT_GROUP);
      assert.equal(servers.length, count);
      assert.equal(groups.length, Math.ceil(count / 10));
      assert.equal(ofType(resources, TOKEN).length, count);
      for (const g of groups) assert.deepEqual(plain(g.inputs).type, "spread");
      const groupIdByIndex = new Map(groups.map((g) => [Number(/-pg-(\d+)$/.exec(g.name)?.[1]), Number(g.id)]));
      for (const server of servers) {
        const index = Number(/^example-hel1-general-(\d+)-/.exec(server.name)?.[1]);
        assert.equal(server.inputs.placementGroupId, groupIdByIndex.get(Math.floor(index / 10)), server.name);
      }
      const perGroup = new Map<unknown, number>();
      for (const s of servers) perGroup.set(s.inputs.placementGroupId, (perGroup.get(s.inputs.placementGroupId) ?? 0) + 1);
      for (const n of perGroup.values()) assert.ok(n <= 10);
    });
  }

  describe("the servers of the example pool", () => {
    let resources: RecordedResource[];
    let outputs: Record<string, unknown>;
    before(async () => {
      const run = await runFleetProgramUnderMocks(rawFleetConfig());
      resources = run.resources;
      outputs = run.outputs as Record<string, unknown>;
    });

    it("names each server `<hostname>-<generation>`, as resource and as Hetzner server", () => {
      const servers = ofType(resources, SERVER);
      assert.equal(servers.length, 3, "the autoscaled pool declares no members in the git-owned stack");
      servers.forEach((server, i) => {
        assert.match(server.name, new RegExp(`^example-hel1-general-${i}-[a-z0-9]{6}$`));
        assert.equal(server.inputs.name, server.name);
        assert.ok(server.name.length <= 63);
      });
    });

    it("sets ownership labels, type, image, location, protection and public networking", () => {
      for (const [i, server] of ofType(resources, SERVER).entries()) {
        const inputs = plain(server.inputs);
        assert.deepEqual(inputs.labels, {
          "nodefleet.io/cluster": "example",
          "nodefleet.io/pool": "hel1-general",
          "nodefleet.io/node": `hel1-general-${i}`,
        });
        assert.equal(inputs.serverType, "cpx31", "static pools use the first server type");
        assert.equal(inputs.image, "ubuntu-24.04");
        assert.equal(inputs.location, "hel1");
        assert.deepEqual(inputs.sshKeys, []);
        assert.equal(inputs.deleteProtection, false);
        assert.equal(inputs.rebuildProtection, false);
        assert.deepEqual(inputs.publicNets, [{ ipv4Enabled: true, ipv6Enabled: true }]);
      }
    });

    it("attaches every server to the cluster firewall and the private network at creation", () => {
      const firewall = ofType(resources, "hcloud:index/firewall:Firewall")[0];
      const network = ofType(resources, "hcloud:index/network:Network")[0];
      assert.equal(ofType(resources, "hcloud:index/firewallAttachment:FirewallAttachment").length, 0);
      for (const server of ofType(resources, SERVER)) {
        assert.deepEqual(server.inputs.firewallIds, [Number(firewall.id)]);
        assert.deepEqual(server.inputs.networks, [{ networkId: Number(network.id), aliasIps: [] }]);
      }
    });

    it("keeps user data secret, valid for cloud-init and under 32 KiB", () => {
      for (const server of ofType(resources, SERVER)) {
        assert.ok(isWrappedSecret(server.inputs.userData), `${server.name} user data is a secret`);
        const userData = userDataOf(server);
        assert.ok(Buffer.byteLength(userData) < 32 * 1024);
        assertCloudInitSchemaValid(userData);
        const node = String(plain(server.inputs).labels && (plain(server.inputs).labels as Record<string, string>)["nodefleet.io/node"]);
        assert.ok(userData.includes(`nodefleet:///example/${node}`), "the providerID is rendered");
      }
    });

    it("has each static server's kubelet register its address in the cluster subnet as InternalIP (--node-ip)", () => {
      for (const server of ofType(resources, SERVER)) {
        const userData = userDataOf(server);
        assert.match(userData, /--node-ip=\$\{node_ip\}/, `${server.name} passes --node-ip`);
        assert.match(userData, /address in 10\.0\.1\.0\/24 \(the private network\)/, `${server.name} looks in the cluster subnet`);
      }
    });

    it("creates one bootstrap token resource per node, through the pool's nodefleet provider, matching its user data", () => {
      const tokenResources = ofType(resources, TOKEN);
      const servers = ofType(resources, SERVER);
      assert.equal(tokenResources.length, servers.length);
      const tokens = new Set<string>();
      for (const server of servers) {
        const resource = tokenResources.find((s) => s.name === `${server.name}-token`);
        assert.ok(resource, `a token for ${server.name}`);
        assert.match(String(resource.provider), /pulumi:providers:nodefleet::example-hel1-general-cluster-access::/);
        const inputs = plain(resource.inputs);
        assert.deepEqual([inputs.clusterKind, inputs.nodeName, inputs.secretObject, inputs.ttlMinutes], ["k0s", server.name, true, 60]);
        const token = bootstrapTokenIn(userDataOf(server));
        assert.match(token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
        tokens.add(token);
        // The token secret never appears in plain inputs.
        assert.ok(!JSON.stringify(resolveSecrets(server.inputs, false)).includes(token.split(".")[1]!));
      }
      assert.equal(tokens.size, servers.length, "tokens are never shared between nodes");
    });

    it("reports every node with its ids and addresses", () => {
      const nodes = outputs.nodes as Array<Record<string, unknown>>;
      const servers = ofType(resources, SERVER);
      assert.equal(nodes.length, 3);
      nodes.forEach((node, i) => {
        assert.equal(node.nodeId, `hel1-general-${i}`);
        assert.equal(node.providerID, `nodefleet:///example/hel1-general-${i}`);
        assert.equal(node.serverId, servers[i].id);
        assert.match(String(node.ipv4), /^203\.0\.113\.\d+$/);
        assert.equal(node.pool, "hel1-general");
        assert.equal(node.serverType, "cpx31");
        assert.equal(node.location, "hel1");
        assert.equal(node.serverName, servers[i].name);
        assert.equal(node.hostname, `example-hel1-general-${i}`, "hostname stays the member's base name");
        assert.equal(node.nodeName, servers[i].name, "the Kubernetes Node is named by generation");
      });
    });

    it("names each machine and its Kubernetes Node after the server, generation included", () => {
      for (const server of ofType(resources, SERVER)) {
        const userData = userDataOf(server);
        assert.ok(userData.includes(`--hostname-override=${server.name} `), `${server.name}: the kubelet registers as ${server.name}`);
        assert.equal((parse(userData) as { hostname: string }).hostname, server.name);
      }
    });
  });

  it("declares identical inputs for every resource on two runs of the same config", async () => {
    const first = await runFleetProgramUnderMocks(rawFleetConfig());
    const second = await runFleetProgramUnderMocks(rawFleetConfig());
    assert.deepEqual(
      second.resources.map((r) => [r.type, r.name]),
      first.resources.map((r) => [r.type, r.name]),
    );
    first.resources.forEach((r, i) => assert.deepEqual(plain(second.resources[i].inputs), plain(r.inputs), `${r.type} ${r.name}`));
  });

  it("changes nothing for existing nodes when a node is added", async () => {
    const before = await runFleetProgramUnderMocks(staticOnly(3));
    const after = await runFleetProgramUnderMocks(staticOnly(4));
    const afterByKey = new Map(after.resources.map((r) => [`${r.type}/${r.name}`, r]));
    for (const r of before.resources) {
      const same = afterByKey.get(`${r.type}/${r.name}`);
      assert.ok(same, `${r.type} ${r.name} still declared`);
      assert.deepEqual(plain(same.inputs), plain(r.inputs), `${r.type} ${r.name}`);
    }
    const added = after.resources.filter((r) => !before.resources.some((b) => b.type === r.type && b.name === r.name));
    assert.deepEqual(added.map((r) => r.type).sort(), [SERVER, TOKEN].sort());
    assert.ok(added.every((r) => r.name.startsWith("example-hel1-general-3-")));
  });

  it("replaces a server under a new name, with a new token, when a replace-forcing input changes", async () => {
    const before = await runFleetProgramUnderMocks(staticOnly(2));
    const after = await runFleetProgramUnderMocks(staticOnly(2, { image: "ubuntu-22.04" }));
    const names = (run: typeof before) => ofType(run.resources, SERVER).map((s) => s.name);
    for (const name of names(after)) assert.ok(!names(before).includes(name));
    const tokens = (run: typeof before) => ofType(run.resources, SERVER).map((s) => bootstrapTokenIn(userDataOf(s)));
    for (const token of tokens(after)) assert.ok(!tokens(before).includes(token));
  });

  it("gives the old and new server of a replacement different Node names and the same providerID; the old Node's removal targets the old name", async () => {
    const kubeconfig = tokenKubeconfig("t0ken");
    const run = (pool: Record<string, unknown>) =>
      runUnderMocks({
        stack: "test",
        config: rawFleetConfig({ cluster: { kubeconfig }, pools: [hcloudStaticPoolConfig({ replicas: 1, ...pool })] }),
        secretKeys: ["nodefleet:cluster"],
        program: () => runProgram(),
      });
    const before = await run({});
    const after = await run({ image: "ubuntu-22.04" });
    const [oldServer] = ofType(before.resources, SERVER);
    const [newServer] = ofType(after.resources, SERVER);
    assert.notEqual(newServer.name, oldServer.name);
    const overrideOf = (server: RecordedResource) => /--hostname-override=(\S+)/.exec(userDataOf(server))?.[1];
    const providerIdOf = (server: RecordedResource) => /--provider-id=(\S+)/.exec(userDataOf(server))?.[1];
    assert.equal(overrideOf(oldServer), oldServer.name);
    assert.equal(overrideOf(newServer), newServer.name);
    assert.notEqual(overrideOf(oldServer), overrideOf(newServer), "two kubelets never share one Node");
    assert.equal(providerIdOf(oldServer), "nodefleet:///example/hel1-general-0");
    assert.equal(providerIdOf(newServer), providerIdOf(oldServer));

    const removals = (r: typeof before) => ofType(r.resources, "nodefleet:kubernetes:NodeRemoval");
    const [oldRemoval] = removals(before);
    const [newRemoval] = removals(after);
    assert.equal(oldRemoval.name, `${oldServer.name}-node-removal`);
    assert.equal(oldRemoval.inputs.nodeName, oldServer.name, "the old generation's removal deletes the old Node");
    assert.equal(newRemoval.inputs.nodeName, newServer.name);
    assert.ok(
      !removals(after).some((r) => r.name === oldRemoval.name),
      "the old removal leaves the program, so Pulumi deletes it (and its Node)",
    );
  });

  it("keeps names when only in-place inputs change (delete protection)", async () => {
    const before = await runFleetProgramUnderMocks(staticOnly(2));
    const after = await runFleetProgramUnderMocks(staticOnly(2, { deleteProtection: true }));
    assert.deepEqual(
      ofType(after.resources, SERVER).map((s) => s.name),
      ofType(before.resources, SERVER).map((s) => s.name),
    );
    for (const s of ofType(after.resources, SERVER)) {
      assert.equal(s.inputs.deleteProtection, true);
      assert.equal(s.inputs.rebuildProtection, true);
    }
  });

  it("fails with every problem and registers nothing for an invalid config", async () => {
    const config = rawFleetConfig({
      cluster: { apiServer: "http://insecure" },
      pools: [hcloudStaticPoolConfig({ location: "ash" }), hcloudAutoscaledPoolConfig({ name: "hel1-general" })],
    });
    let error: unknown;
    const run = await runUnderMocks({
      stack: "test",
      config,
      program: async () => {
        try {
          return await runProgram({ allowMissingKubeconfig: true });
        } catch (e) {
          error = e;
          return {};
        }
      },
    });
    assert.ok(error instanceof FleetSpecError, String(error));
    const problems = (error as FleetSpecError).problems.join("\n");
    assert.match(problems, /nodefleet:cluster\.apiServer/);
    assert.match(problems, /nodefleet:pools\[0\]\.location/);
    assert.match(problems, /nodefleet:pools\[1\]\.name: pool name hel1-general is already used/);
    assert.equal(run.resources.length, 0);
  });

  it("requires a kubeconfig unless told it is a render or simulation, and keeps it secret", async () => {
    let error: unknown;
    const run = await runUnderMocks({
      stack: "test",
      config: rawFleetConfig(),
      program: async () => runProgram().catch((e: unknown) => ((error = e), {})),
    });
    assert.ok(error instanceof FleetSpecError);
    assert.match(String((error as Error).message), /kubeconfig/);
    assert.equal(run.resources.length, 0);

    const kubeconfig = "apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: very-secret}}]\n";
    const withKubeconfig = await runUnderMocks({
      stack: "test",
      config: rawFleetConfig({ cluster: { kubeconfig } }),
      secretKeys: ["nodefleet:cluster"],
      program: () => runProgram(),
    });
    const provider = ofType(withKubeconfig.resources, "pulumi:providers:kubernetes")[0];
    assert.ok(isWrappedSecret(provider.inputs.kubeconfig));
    assert.equal(plain({ k: provider.inputs.kubeconfig }).k, kubeconfig);
    for (const r of withKubeconfig.resources) {
      assert.ok(
        !JSON.stringify(resolveSecrets(r.inputs, false)).includes("very-secret"),
        `${r.type} ${r.name} keeps the kubeconfig secret`,
      );
    }
  });
});

describe("HcloudNodePool with explicit members (the scaling API's way)", function () {
  this.timeout(60_000);
  const spec = parseFleetSpec(rawFleetConfig({ pools: [hcloudStaticPoolConfig()] }));
  const pool = spec.pools[0] as HcloudStaticPool;
  const { kubeconfig: _unused, ...cluster } = spec.cluster;
  const [first, second] = staticHcloudMembers(cluster, pool);

  async function declare(members: HcloudPoolMember[], overrides: Partial<ConstructorParameters<typeof HcloudNodePool>[1]> = {}) {
    return runUnderMocks({
      stack: "api",
      program: () => {
        const nodePool = new HcloudNodePool("burst", {
          cluster,
          pool,
          members,
          networkId: pulumi.output(4711),
          firewallIds: [pulumi.output(815)],
          ...overrides,
        });
        return { nodes: nodePool.nodes };
      },
    });
  }

  it("takes network and firewall ids as Inputs (e.g. from look-ups) and registers extra taints", async () => {
    const unregistered = { key: "karpenter.sh/unregistered", effect: "NoExecute" as const };
    const { resources } = await declare([{ ...first, extraTaints: [unregistered] }]);
    const [server] = ofType(resources, SERVER);
    assert.deepEqual(server.inputs.firewallIds, [815]);
    assert.deepEqual(server.inputs.networks, [{ networkId: 4711, aliasIps: [] }]);
    assert.match(userDataOf(server), /karpenter\.sh\/unregistered:NoExecute/);
    assertCloudInitSchemaValid(userDataOf(server));
  });

  it("keeps a member's spread group by its placement slot when others leave", async () => {
    const { resources } = await declare([
      { ...first, placementSlot: 3 },
      { ...second, placementSlot: 17 },
    ]);
    const groups = ofType(resources, PLACEMENT_GROUP);
    assert.deepEqual(groups.map((g) => g.name).sort(), ["burst-pg-0", "burst-pg-1"]);
    const [s0, s1] = ofType(resources, SERVER);
    assert.equal(s0.inputs.placementGroupId, Number(groups.find((g) => g.name === "burst-pg-0")?.id));
    assert.equal(s1.inputs.placementGroupId, Number(groups.find((g) => g.name === "burst-pg-1")?.id));
  });

  it("renders a frozen member from its snapshot, not from the cluster's current versions", () => {
    const newer = { ...cluster, k0sVersion: "v1.34.1+k0s.0" };
    const frozen = planHcloudServers(newer, pool, [{ ...first, bootstrap: { k0sVersion: "v1.33.4+k0s.0" } }])[0];
    const current = planHcloudServers(cluster, pool, [first])[0];
    assert.equal(frozen.generation, current.generation);
    assert.equal(frozen.cluster.k0sVersion, "v1.33.4+k0s.0");
  });

  it("passes --node-ip only with a private subnet and nodeAddress private; the generation follows it", () => {
    const without = planHcloudServers(cluster, pool, [first])[0];
    const withSubnet = planHcloudServers(cluster, pool, [first], "10.0.1.0/24")[0];
    const publicOnly = planHcloudServers({ ...cluster, nodeAddress: "public" }, pool, [first], "10.0.1.0/24")[0];
    assert.deepEqual(withSubnet.render.nodeIp, { subnet: "10.0.1.0/24" });
    assert.equal(without.render.nodeIp, undefined);
    assert.equal(publicOnly.render.nodeIp, undefined);
    assert.notEqual(withSubnet.generation, without.generation, "a changed --node-ip is a new server generation");
    assert.equal(publicOnly.generation, without.generation);
  });

  it("refuses user data over 32 KiB, naming the node", () => {
    const labels = Object.fromEntries(Array.from({ length: 600 }, (_, i) => [`example.com/label-${i}`, "x".repeat(60)]));
    assert.throws(
      () => planHcloudServers(cluster, pool, [{ ...first, labels }]),
      /node example-hel1-general-0: the rendered user data is \d+ bytes, more than the 32768 bytes/,
    );
  });

  it("refuses duplicate members", () => {
    assert.throws(() => planHcloudServers(cluster, pool, [first, first]), /node hel1-general-0 is listed twice/);
  });

  it("dispatches kubeadm clusters to their renderer (or says it is not available yet, naming the node)", () => {
    const kubeadm = { ...cluster, kind: "kubeadm" as const, kubernetesVersion: "v1.33.4" };
    let planned: ReturnType<typeof planHcloudServers> | undefined;
    try {
      planned = planHcloudServers(kubeadm, pool, [first]);
    } catch (e) {
      assert.match(String((e as Error).message), /kubeadm clusters: .*not available yet.*example-hel1-general-0/);
      return;
    }
    assert.notEqual(planned[0].generation, planHcloudServers(cluster, pool, [first])[0].generation);
  });
});
