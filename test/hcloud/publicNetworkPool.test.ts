/**
 * A Hetzner Cloud pool with `network: public` under Pulumi's mock runtime: its servers join no
 * network and register their public address, the firewall opens the named CNI's WireGuard ports,
 * the network setting is part of the generation, and the scaling API's pool is not held to 100.
 */
import { strict as assert } from "node:assert";
import * as pulumi from "@pulumi/pulumi";
import type { RecordedResource } from "../../automation/mocks/runUnderMocks";
import { runUnderMocks } from "../../automation/mocks/runUnderMocks";
import { resolveSecrets } from "../../automation/mocks/secretValues";
import { parseFleetSpec, type HcloudStaticPool } from "../../components/fleet/fleetSpec";
import { HcloudNodePool } from "../../components/hcloud/hcloudNodePool";
import { type HcloudPoolMember, staticHcloudMembers } from "../../components/hcloud/hcloudServerPlan";
import { autoscaledMember } from "../../stacks/autoscaledProgram";
import type { MemberSnapshot } from "../../automation/store/claimSnapshot";
import { hcloudStaticPoolConfig, rawFleetConfig, runFleetProgramUnderMocks } from "../support/fleetConfigFixture";

const SERVER = "hcloud:index/server:Server";
const FIREWALL = "hcloud:index/firewall:Firewall";
const ofType = (resources: RecordedResource[], type: string) => resources.filter((r) => r.type === type);
const userDataOf = (server: RecordedResource) => (resolveSecrets({ u: server.inputs.userData }, true) as { u: string }).u;

const PUBLIC_CLUSTER = { nodeAddress: "public", cniEncryption: "flannel-wireguard" };

function twoPools(generalNetwork: string, cluster: Record<string, unknown> = PUBLIC_CLUSTER) {
  return rawFleetConfig({
    cluster,
    pools: [
      hcloudStaticPoolConfig({ replicas: 2, network: generalNetwork, sshKeys: ["ops"] }),
      hcloudStaticPoolConfig({ name: "hel1-inner", replicas: 2, labels: {}, sshKeys: ["ops"] }),
    ],
  });
}

describe("HcloudNodePool with network: public under mocks", function () {
  this.timeout(120_000);

  it("attaches no network to a public pool's servers and keeps the private pool's attachment", async () => {
    const { resources } = await runFleetProgramUnderMocks(twoPools("public"));
    const network = ofType(resources, "hcloud:index/network:Network")[0]!;
    const servers = ofType(resources, SERVER);
    const publicServers = servers.filter((s) => s.name.startsWith("example-hel1-general-"));
    const privateServers = servers.filter((s) => s.name.startsWith("example-hel1-inner-"));
    assert.equal(publicServers.length, 2);
    assert.equal(privateServers.length, 2);
    for (const server of publicServers) {
      assert.equal(server.inputs.networks, undefined, `${server.name} joins no network`);
      assert.deepEqual(server.inputs.publicNets, [{ ipv4Enabled: true, ipv6Enabled: true }], "its public address is how it talks");
      assert.doesNotMatch(userDataOf(server), /--node-ip/, "the kubelet keeps its default, the public address");
      assert.equal((server.inputs.firewallIds as unknown[]).length, 1, "the cluster firewall filters it from the first boot");
    }
    for (const server of privateServers) {
      assert.deepEqual(server.inputs.networks, [{ networkId: Number(network.id), aliasIps: [] }]);
      assert.doesNotMatch(userDataOf(server), /--node-ip/, "nodeAddress public: every node registers its public address");
    }
  });

  it("opens the named CNI's WireGuard ports on the cluster firewall, and no node-to-node port besides", async () => {
    const { resources } = await runFleetProgramUnderMocks(twoPools("public"));
    const rules = (ofType(resources, FIREWALL)[0]!.inputs.rules as Array<{ protocol: string; port?: string; sourceIps: string[] }>).map(
      (r) => `${r.protocol}/${r.port ?? "-"} from ${r.sourceIps.join(",")}`,
    );
    assert.deepEqual(rules, [
      "tcp/10250 from 203.0.113.10/32",
      "udp/51871 from 0.0.0.0/0,::/0",
      "icmp/- from 0.0.0.0/0,::/0",
      "udp/51820 from 0.0.0.0/0,::/0",
      "udp/51821 from 0.0.0.0/0,::/0",
    ]);
  });

  it("gives the public pool's servers a generation of their own, so moving a pool rolls it to new servers", async () => {
    const names = async (network: string) =>
      ofType((await runFleetProgramUnderMocks(twoPools(network))).resources, SERVER)
        .map((s) => s.name)
        .filter((n) => n.startsWith("example-hel1-general-"))
        .sort();
    const [onPublic, onPrivate] = [await names("public"), await names("private")];
    assert.equal(onPublic.length, 2);
    for (let i = 0; i < 2; i++) {
      assert.notEqual(onPublic[i], onPrivate[i]);
      assert.equal(onPublic[i]!.slice(0, -7), onPrivate[i]!.slice(0, -7), "same member, another generation");
    }
  });

  it("keeps a private pool's generation as it was before the setting existed", async () => {
    const before = rawFleetConfig({ pools: [hcloudStaticPoolConfig({ replicas: 1, sshKeys: ["ops"] })] });
    const after = rawFleetConfig({ pools: [hcloudStaticPoolConfig({ replicas: 1, sshKeys: ["ops"], network: "private" })] });
    const name = async (config: Record<string, unknown>) => ofType((await runFleetProgramUnderMocks(config)).resources, SERVER)[0]!.name;
    assert.equal(await name(after), await name(before));
  });

  it("puts a placement: none pool's servers in no spread group, as a generation of their own", async () => {
    const config = (placement: string) =>
      rawFleetConfig({
        cluster: PUBLIC_CLUSTER,
        pools: [hcloudStaticPoolConfig({ replicas: 12, network: "public", placement, sshKeys: ["ops"] })],
      });
    const none = (await runFleetProgramUnderMocks(config("none"))).resources;
    assert.equal(ofType(none, "hcloud:index/placementGroup:PlacementGroup").length, 0);
    const servers = ofType(none, SERVER);
    assert.equal(servers.length, 12);
    for (const server of servers) assert.equal(server.inputs.placementGroupId, undefined, server.name);
    const spread = (await runFleetProgramUnderMocks(config("spread"))).resources;
    assert.equal(ofType(spread, "hcloud:index/placementGroup:PlacementGroup").length, 2);
    const spreadNames = new Set(ofType(spread, SERVER).map((s) => s.name));
    for (const server of servers) assert.ok(!spreadNames.has(server.name), `${server.name} is another generation than with spread`);
  });

  describe("the scaling API's members", () => {
    const spec = parseFleetSpec(
      rawFleetConfig({ cluster: PUBLIC_CLUSTER, pools: [hcloudStaticPoolConfig({ network: "public", sshKeys: ["ops"] })] }),
    );
    const pool = spec.pools[0] as HcloudStaticPool;
    const { kubeconfig: _unused, ...cluster } = spec.cluster;

    function snapshot(network: "public" | undefined, slot: number): MemberSnapshot {
      return {
        template: {
          pool: pool.name,
          location: "hel1",
          serverTypes: ["cpx31"],
          image: "ubuntu-24.04",
          sshKeys: [],
          deleteProtection: false,
          labels: {},
          taints: [],
          clusterKind: "k0s",
          k0sVersion: "v1.33.4+k0s.0",
          kubelet: cluster.kubelet,
          ...(network ? { network } : {}),
        },
        serverType: "cpx31",
        location: "hel1",
        requestLabels: {},
        kubeletLabels: {},
        requestTaints: [],
        capacity: { cpuMillis: 4000, memoryMiB: 8192, pods: 110, ephemeralStorageMiB: 163840 },
        allocatable: { cpuMillis: 3900, memoryMiB: 7000, pods: 110, ephemeralStorageMiB: 153600 },
        templateHash: "0000000000000000",
        placementSlot: slot,
      };
    }

    it("renders each member on the network its snapshot froze, in one pool", async () => {
      const members = [
        autoscaledMember(cluster, "burst-a", snapshot("public", 0)),
        autoscaledMember(cluster, "burst-b", snapshot(undefined, 1)),
      ];
      assert.deepEqual(
        members.map((m) => m.network),
        ["public", "private"],
      );
      const { resources } = await runUnderMocks({
        stack: "api",
        program: () => {
          const nodePool = new HcloudNodePool("burst", {
            cluster,
            pool: { name: pool.name, image: pool.image, sshKeys: ["ops"] },
            members,
            networkId: pulumi.output(4711),
            firewallIds: [pulumi.output(815)],
            networkLimit: false,
          });
          return { nodes: nodePool.nodes };
        },
      });
      const byNode = new Map(ofType(resources, SERVER).map((s) => [(s.inputs.labels as Record<string, string>)["nodefleet.io/node"], s]));
      assert.equal(byNode.get("burst-a")!.inputs.networks, undefined);
      assert.deepEqual(byNode.get("burst-b")!.inputs.networks, [{ networkId: 4711, aliasIps: [] }]);
    });

    it("declares every one of 120 public members (no network cap), where a private pool stops at the network's 100", async () => {
      const members: HcloudPoolMember[] = staticHcloudMembers(cluster, { ...pool, replicas: 120 });
      const count = async (network: "public" | "private") =>
        ofType(
          (
            await runUnderMocks({
              stack: "api",
              program: () => {
                const nodePool = new HcloudNodePool("wide", {
                  cluster,
                  pool: { ...pool, network },
                  members: members.map((m) => ({ ...m, network })),
                  networkId: pulumi.output(4711),
                  firewallIds: [pulumi.output(815)],
                });
                return { rollout: nodePool.rolloutSummary };
              },
            })
          ).resources,
          SERVER,
        ).length;
      assert.equal(await count("public"), 120);
      assert.equal(await count("private"), 100);
    });
  });
});
