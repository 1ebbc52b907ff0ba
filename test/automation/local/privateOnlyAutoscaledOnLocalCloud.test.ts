/**
 * An autoscaled pool without public IPv4 or IPv6 (issue #39 part 1) through `nodefleet serve
 * --engine automation` on the local cloud, real engine: the member the scaling API creates has no
 * public address in the fake Hetzner API, routes through the network's NAT gateway, and its Node
 * turns Ready with its private address as its only InternalIP.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kube } from "../../../automation/local/kubeClient";
import { awaitRunning, deleteUntilGone } from "../../support/karpenterConformance";
import { editLocalPools, hcloudGet, isReady, poolNodes, setLocalNatGateway } from "../../support/localFleet";
import { type LocalCloudWithServe, startLocalCloudWithServe, stopLocalCloudWithServe } from "../../support/localCloudWithServe";
import { until } from "../../support/until";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const NAT_GATEWAY = "10.0.2.2";

interface ServerJson {
  readonly id: number;
  readonly public_net: { ipv4: { ip: string } | null; ipv6: { ip: string } | null };
  readonly private_net: Array<{ ip: string }>;
}

describe("an autoscaled pool without public addresses on the local cloud", function () {
  this.timeout(900_000);
  let dir: string | undefined;
  let started: LocalCloudWithServe | undefined;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-private-autoscaled-"));
    started = await startLocalCloudWithServe(dir, (cloud) => {
      setLocalNatGateway(cloud, NAT_GATEWAY);
      editLocalPools(cloud, (pools) => pools.map((p) => (p.name === "local-burst" ? { ...p, publicIpv4: false, publicIpv6: false } : p)));
    });
  });

  after(async function () {
    await stopLocalCloudWithServe(dir, started);
  });

  it("creates a member with no public IPv4 or IPv6 whose Node registers its private address", async () => {
    const { cloud, serve } = started!;
    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>) =>
      until(what, probe, 600_000, () => `serve said:\n${serve.stderr().slice(-3000)}`, 1000);
    const { node } = await serve.client.createNode({ uniqueID: "private-only", pool: "local-burst", instanceType: "cpx21" });
    await awaitRunning(serve.client, [node.nodeID], waitFor, "nodefleet:///local/");
    const servers = (await hcloudGet(cloud, "/servers?label_selector=nodefleet.io/pool=local-burst")).servers as ServerJson[];
    assert.equal(servers.length, 1);
    assert.equal(servers[0]!.public_net.ipv4, null, "no public IPv4");
    assert.equal(servers[0]!.public_net.ipv6, null, "no public IPv6");
    const privateIp = servers[0]!.private_net[0]!.ip;
    const ready = await waitFor("the member's Node Ready", async () => (await poolNodes(cloud, "local-burst")).find(isReady));
    const { status } = (await kube(cloud.plane.admin, "GET", `/api/v1/nodes/${ready.metadata.name}`)) as {
      status: { addresses: Array<{ type: string; address: string }> };
    };
    assert.deepEqual(
      status.addresses.filter((a) => a.type === "InternalIP" || a.type === "ExternalIP").map((a) => `${a.type}=${a.address}`),
      [`InternalIP=${privateIp}`],
    );
    await deleteUntilGone(serve.client, [node.nodeID], waitFor);
  });
});
