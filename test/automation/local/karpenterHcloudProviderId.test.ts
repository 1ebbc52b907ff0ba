/**
 * `cluster.hcloudProviderIds: hcloud` with Karpenter's real controllers on the local cloud
 * (docs/hcloud-ccm.md): a pending pod gets a NodeClaim whose providerID is `hcloud://<server id>`
 * of the burst server the fake Hetzner API created for it (the driver's Create waits until the
 * server exists), and the Node that server's machine registers carries the same providerID, read
 * at boot from the fake's metadata stand-in, so Karpenter registers and initializes it.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, type KubeItem, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { setLocalHcloudProviderIds } from "../../support/localFleet";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims";
const BURST_NODES = "/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst";

const condition = (item: KubeItem, type: string) => item.status?.conditions?.find((c) => c.type === type)?.status === "True";

describe("hcloud:// providerIDs through Karpenter on the local cloud", function () {
  this.timeout(900_000);
  let loop: KarpenterLoop;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
    loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-hcloud-id-")), {
      prepare: (cloud) => setLocalHcloudProviderIds(cloud, "hcloud"),
    });
  });

  after(async function () {
    await loop?.stop();
  });

  it("launches a NodeClaim whose providerID is its server's hcloud://<id>, equal to its Node's", async function () {
    await loop.inflate(1, "500m");
    const nodeClaim = await loop.waitFor("an initialized NodeClaim", async () =>
      (await loop.list(NODECLAIMS)).find((c) => condition(c, "Initialized")),
    );
    const servers = await loop.burstServers();
    const providerID = nodeClaim.status?.providerID ?? "";
    const server = servers.find((s) => providerID === `hcloud://${s.id}`);
    assert.ok(
      server,
      `NodeClaim ${nodeClaim.metadata.name}'s providerID ${providerID} names a burst server (${servers.map((s) => s.id).join(", ")})`,
    );
    const nodes = await loop.list(BURST_NODES);
    const node = nodes.find((n) => n.metadata.name === nodeClaim.status?.nodeName);
    assert.ok(node, `the NodeClaim's Node ${nodeClaim.status?.nodeName} exists`);
    assert.equal(node.spec?.providerID, providerID, "the Node's providerID is the NodeClaim's");
    assert.equal(node.metadata.name, server.name, "the Node is that server's machine");
  });
});
