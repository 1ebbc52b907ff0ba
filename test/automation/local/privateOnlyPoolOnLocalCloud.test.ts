/**
 * Pools without public IPv4 (docs/networking.md, "Pools without public IPv4") with the real engine
 * on the local cloud: the fleet names a NAT gateway, nodefleet routes the network's 0.0.0.0/0 to it,
 * and a static pool with `publicIpv4: false` (one with IPv6, one with neither) gets servers with no
 * public IPv4 in the fake, behind the cluster firewall, whose Nodes become Ready with their private
 * address as their only InternalIP. The node agent joins such a machine only when its user data
 * routes through the private network and the network routes 0.0.0.0/0 (automation/local/nodeAgent.ts).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { runPulumi } from "../../../automation/local/localStack";
import { UP, editLocalPools, hcloudGet, isReady, poolNodes, poolServers, setLocalNatGateway } from "../../support/localFleet";
import { localStackProject } from "../../support/localStackProject";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const NAT_GATEWAY = "10.0.2.2";

interface ServerJson {
  readonly name: string;
  readonly public_net: { ipv4: { ip: string } | null; ipv6: { ip: string } | null; firewalls: Array<{ id: number }> };
  readonly private_net: Array<{ ip: string; network: number }>;
}

interface NodeJson {
  status: { addresses?: Array<{ type: string; address: string }> };
}

describe("pools without public IPv4, on the real engine against the local cloud", function () {
  this.timeout(900_000);
  let dir: string;
  let cloud: LocalCloud | undefined;

  const server = async (name: string) => ((await hcloudGet(cloud!, `/servers?name=${name}`)).servers as ServerJson[])[0]!;
  const addresses = async (name: string) =>
    ((await kube(cloud!.plane.admin, "GET", `/api/v1/nodes/${name}`)) as NodeJson).status.addresses ?? [];
  const allReady = (pool: string, count: number) =>
    until(
      `${count} Ready Nodes in ${pool}`,
      async () => ((await poolNodes(cloud!, pool)).filter(isReady).length === count ? true : undefined),
      300_000,
    );

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-private-only-"));
    const project = localStackProject(join(dir, "project"));
    cloud = await startLocalCloud({
      dataDir: join(dir, "data"),
      hcloudPort: 0,
      agentIntervalMs: 500,
      logger: { info() {}, warn() {} },
      projectDir: project,
    });
    setLocalNatGateway(cloud, NAT_GATEWAY);
    editLocalPools(cloud, (pools) =>
      pools.flatMap((pool) => {
        if (pool.name !== "local-general") return [pool];
        const dark = {
          ...pool,
          name: "local-dark",
          replicas: 1,
          publicIpv6: false,
          labels: { "node.kubernetes.io/pool": "local-dark" },
        };
        return [
          { ...pool, replicas: 2, publicIpv4: false },
          { ...dark, publicIpv4: false },
        ];
      }),
    );
    await runPulumi(UP, project, cloud.env);
  });

  after(async function () {
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("routes the network's 0.0.0.0/0 to the named NAT gateway", async function () {
    const networks = (await hcloudGet(cloud!, "/networks?name=local-network")).networks as Array<{ routes: unknown[] }>;
    assert.equal(networks.length, 1);
    assert.deepEqual(networks[0]!.routes, [{ destination: "0.0.0.0/0", gateway: NAT_GATEWAY }]);
  });

  it("gives the pools' servers no public IPv4 (and no IPv6 where turned off), and their Nodes only their private address", async function () {
    await allReady("local-general", 2);
    await allReady("local-dark", 1);
    for (const [pool, ipv6] of [
      ["local-general", true],
      ["local-dark", false],
    ] as const) {
      const servers = await poolServers(cloud!, pool);
      assert.equal(servers.length, pool === "local-general" ? 2 : 1);
      for (const { name } of servers) {
        const json = await server(name);
        assert.equal(json.public_net.ipv4, null, `${name} has no public IPv4`);
        assert.equal(json.public_net.ipv6 !== null, ipv6, `${name} public IPv6 ${ipv6 ? "on" : "off"}`);
        assert.ok(json.public_net.firewalls.length > 0, `${name} is behind the cluster firewall`);
        assert.equal(json.private_net.length, 1, `${name} is on the private network`);
        assert.deepEqual(
          await addresses(name),
          [{ type: "InternalIP", address: json.private_net[0]!.ip }],
          `${name} registered its private IP only`,
        );
      }
    }
  });
});
