/**
 * Pools off the private network (docs/networking.md) with the real engine on the local cloud: a
 * static pool with `network: public` gets servers that join no network, sit behind the cluster
 * firewall and register their public address as InternalIP (the node agent reports what a kubelet
 * without `--node-ip` would); beside it a pool on the network still joins it, its Node registering
 * its public address as well (`cluster.nodeAddress: public`, docs/networking.md); and an
 * autoscaled pool off the network, whose maxNodes is past the 100 servers a network holds, gets
 * its members from the scaling API off the network as well.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kube } from "../../../automation/local/kubeClient";
import type { LocalCloud } from "../../../automation/local/localCloud";
import { editLocalPools, hcloudGet, isReady, poolNodes, poolServers, setLocalPublicAddresses } from "../../support/localFleet";
import type { ServeProcess } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";
import { type LocalCloudWithServe, startLocalCloudWithServe, stopLocalCloudWithServe } from "../../support/localCloudWithServe";

interface ServerJson {
  readonly name: string;
  readonly public_net: { ipv4: { ip: string } | null; firewalls: Array<{ id: number }> };
  readonly private_net: Array<{ ip: string }>;
  readonly placement_group: unknown;
}

interface NodeJson {
  metadata: { name: string };
  status: { addresses?: Array<{ type: string; address: string }> };
}

describe("pools off the private network, on the real engine against the local cloud", function () {
  this.timeout(900_000);
  let dir: string;
  let cloud: LocalCloud;
  let serve: ServeProcess | undefined;
  let started: LocalCloudWithServe | undefined;

  const server = async (name: string) => ((await hcloudGet(cloud, `/servers?name=${name}`)).servers as ServerJson[])[0]!;
  const internalIp = async (name: string) => {
    const node = (await kube(cloud.plane.admin, "GET", `/api/v1/nodes/${name}`)) as NodeJson;
    return node.status.addresses?.find((a) => a.type === "InternalIP")?.address;
  };
  const allReady = (pool: string, count: number) =>
    until(
      `${count} Ready Nodes in ${pool}`,
      async () => ((await poolNodes(cloud, pool)).filter(isReady).length === count ? true : undefined),
      300_000,
    );

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-public-network-"));
    started = await startLocalCloudWithServe(dir, (cloud) => {
      setLocalPublicAddresses(cloud);
      editLocalPools(cloud, (pools) =>
        pools.flatMap((pool) => {
          if (pool.name === "local-general") {
            const wide = {
              ...pool,
              name: "local-wide",
              replicas: 2,
              network: "public",
              labels: { "node.kubernetes.io/pool": "local-wide" },
            };
            return [{ ...pool, replicas: 1 }, wide];
          }
          if (pool.name === "local-burst")
            return [{ ...pool, network: "public", placement: "none", limits: { maxNodes: 150, cpu: 600, memoryGiB: 1200 } }];
          return [pool];
        }),
      );
    });
    ({ cloud, serve } = started);
  });

  after(async function () {
    await stopLocalCloudWithServe(dir, started);
  });

  it("puts a static pool's servers off the network, behind the firewall, and every Node on its public address", async function () {
    await allReady("local-wide", 2);
    await allReady("local-general", 1);
    const wide = await poolServers(cloud, "local-wide");
    assert.equal(wide.length, 2);
    for (const { name } of wide) {
      const json = await server(name);
      assert.deepEqual(json.private_net, [], `${name} joins no network`);
      assert.ok(json.public_net.firewalls.length > 0, `${name} is behind the cluster firewall`);
      assert.equal(await internalIp(name), json.public_net.ipv4?.ip, `${name} registered its public address`);
    }
    const [general] = await poolServers(cloud, "local-general");
    const onNetwork = await server(general!.name);
    assert.equal(onNetwork.private_net.length, 1, "the pool on the network still joins it");
    // cluster.nodeAddress public: every node registers its public address, so nodes on and off the network reach each other.
    assert.equal(await internalIp(general!.name), onNetwork.public_net.ipv4?.ip);
  });

  it("creates an autoscaled member of a pool off the network, whose maxNodes is past a network's 100", async function () {
    const { node } = await serve!.client.createNode({ uniqueID: "public-burst-0", pool: "local-burst", instanceType: "cpx31" });
    await until(
      "the member RUNNING",
      async () => ((await serve!.client.getNode(node.nodeID)).status === "RUNNING" ? true : undefined),
      300_000,
      () => serve!.stderr().slice(-3000),
      500,
    );
    const burst = (await poolServers(cloud, "local-burst")).find((s) => s.labels["nodefleet.io/node"] === node.nodeID);
    assert.ok(burst, `a server carries the member ${node.nodeID}`);
    const json = await server(burst.name);
    assert.deepEqual(json.private_net, [], "the member joins no network");
    assert.equal(json.placement_group, null, "placement none: no spread group");
    await allReady("local-burst", 1);
    assert.equal(await internalIp(burst.name), json.public_net.ipv4?.ip);
  });
});
