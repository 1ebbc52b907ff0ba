/**
 * No leaked server when a create's answer is lost (issue #36 part 1), with Karpenter's real
 * controllers on the local cloud: the API commits every create and drops its answer
 * (NODEFLEET_SIM_DROP_CREATE_ANSWERS), so the NodeClaim never gets its providerID while the API's
 * node is built into a server that boots and joins. The pod goes away and the NodeClaim is deleted
 * (Karpenter releases it at once: it was never launched), which leaves a server no NodeClaim
 * claims; the driver's instance garbage collector (INSTANCE_GC_GRACE=30s here) deletes it through
 * the API, and its Node with it.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nodeIdFor } from "../../../automation/api/nodeIdentity";
import { KubeApiError, kube } from "../../../automation/local/kubeClient";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, type KubeItem, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims";
const BURST_NODES = "/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst";
/** Every create of the test, Karpenter's retries (replays) included, loses its answer. */
const DROPPED = 1_000_000;

describe("a create whose answer is lost leaks no server (Karpenter on the local cloud)", function () {
  this.timeout(900_000);
  let loop: KarpenterLoop;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
    loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-leak-")), {
      dropCreateAnswers: DROPPED,
      instanceGcGrace: "30s",
    });
  });

  after(async function () {
    await loop?.stop();
  });

  it("garbage collects the server of a NodeClaim deleted before its create was answered", async function () {
    await loop.inflate(1, "500m");
    // The API committed the NodeClaim's create (its node is listed), Karpenter never saw the answer.
    const nodeClaim = await loop.waitFor("a NodeClaim whose node the API lists", async () => {
      const listed = new Set((await loop.serve.client.listNodes()).map((node) => node.nodeID));
      return (await loop.list(NODECLAIMS)).find((claim: KubeItem) => listed.has(nodeIdFor(claim.metadata.name)));
    });
    const nodeID = nodeIdFor(nodeClaim.metadata.name);
    assert.equal(nodeClaim.status?.providerID ?? "", "", "the NodeClaim got no providerID: every create answer is dropped");
    await loop.waitFor("the node's server at the fake Hetzner API", async () =>
      (await loop.burstServers()).length > 0 ? true : undefined,
    );

    // Nothing left to claim it: the pod goes, then the NodeClaim (never launched, so Karpenter's
    // Delete answers NodeClaimNotFound and the finalizer lifts without touching the server).
    await kube(loop.cloud.plane.admin, "DELETE", "/apis/apps/v1/namespaces/default/deployments/inflate");
    // Karpenter's own launch timeout (5 minutes) may have deleted it first on a slow machine.
    await kube(loop.cloud.plane.admin, "DELETE", `${NODECLAIMS}/${nodeClaim.metadata.name}`).catch((error: unknown) => {
      if (!(error instanceof KubeApiError && error.status === 404)) throw error;
    });
    await loop.waitFor("no NodeClaims", async () => ((await loop.list(NODECLAIMS)).length === 0 ? true : undefined), 120_000);
    // Only the collector can delete the node now: the NodeClaim never had a providerID, so
    // Karpenter's Delete never reached the API. Grace (30 s) plus a collector period (30 s with
    // that grace) plus the server's deletion.
    await loop.waitFor(
      `node ${nodeID} gone from the API`,
      async () => ((await loop.serve.client.listNodes()).some((node) => node.nodeID === nodeID) ? undefined : true),
      300_000,
    );
    assert.deepEqual(await loop.serve.client.listNodes(), [], "no node left in the API");
    await loop.waitFor("no burst servers", async () => ((await loop.burstServers()).length === 0 ? true : undefined), 120_000);
    await loop.waitFor("no burst Nodes", async () => ((await loop.list(BURST_NODES)).length === 0 ? true : undefined), 120_000);
  });
});
