/**
 * Karpenter's own controllers scaling the local cloud, end to end with real parts only but the
 * machines and the Hetzner API: the toolchain's `nodefleet-karpenter` (Karpenter v1.14.1's core
 * controllers with nodefleet's driver) against the real control plane, `nodefleet serve --engine
 * automation` on the local stack, kube-scheduler binding pods, and the node agent registering Nodes.
 * 20 pending pods become NodeClaims, servers in the fake API, Nodes without the unregistered taint
 * and 20 Running pods; the cheapest type is sold out, so Karpenter must use another one; deleting the
 * pods consolidates the nodes away and releases every finalizer.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kube } from "../../../automation/local/kubeClient";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PODS = 20;

describe("Karpenter's controllers with nodefleet's driver scaling the local cloud", function () {
  this.timeout(900_000);
  let loop: KarpenterLoop;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
    // The cheapest type of the burst pool is sold out: Karpenter has to take the other one.
    loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-e2e-")), { outOfStock: "cpx21" });
  });

  after(async function () {
    await loop?.stop();
  });

  it("turns 20 pending pods into NodeClaims, servers and Nodes of another type than the sold-out one, and runs them all", async function () {
    await loop.inflate(PODS, "700m");
    const running = await loop.waitFor(`${PODS} pods Running`, async () => {
      const pods = (await loop.list("/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate")).filter((p) => p.status?.phase === "Running");
      return pods.length === PODS ? pods : undefined;
    }, 600_000);
    const nodeClaims = await loop.list("/apis/karpenter.sh/v1/nodeclaims");
    assert.ok(nodeClaims.length >= 3 && nodeClaims.length <= 6, `${nodeClaims.length} NodeClaims for ${PODS} pods of 700m`);
    const nodes = new Set(running.map((p) => p.spec!.nodeName!));
    const registered = (await loop.list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")).filter((n) => nodes.has(n.metadata.name));
    assert.equal(registered.length, nodes.size, "every pod runs on a Node Karpenter launched");
    for (const node of registered) {
      assert.match(node.spec!.providerID ?? "", /^nodefleet:\/\/\/local\//);
      assert.ok(!(node.spec!.taints ?? []).some((t) => t.key === "karpenter.sh/unregistered"), "Karpenter removed the unregistered taint");
      assert.equal(node.metadata.labels!["node.kubernetes.io/instance-type"], "cpx31", "not the sold-out cpx21");
    }
    assert.ok((await loop.burstServers()).every((s) => s.server_type.name === "cpx31"));
  });

  it("consolidates the empty nodes away once the pods are gone: servers deleted, finalizers released", async function () {
    await kube(loop.cloud.plane.admin, "DELETE", "/apis/apps/v1/namespaces/default/deployments/inflate");
    await loop.waitFor("no NodeClaims", async () => ((await loop.list("/apis/karpenter.sh/v1/nodeclaims")).length === 0 ? true : undefined), 600_000);
    await loop.waitFor("no burst servers", async () => ((await loop.burstServers()).length === 0 ? true : undefined), 120_000);
    await loop.waitFor("no burst Nodes", async () => ((await loop.list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")).length === 0 ? true : undefined), 120_000);
  });
});
