/**
 * 100 pending pods that need about 25 nodes reach Running through Karpenter's controllers, the
 * driver, the scaling API and the real engine on the local cloud (issue 36), and leave nothing
 * behind once they are gone: one server per NodeClaim, none left after consolidation. The time is
 * printed for the record, never asserted (bench/karpenterScale.bench.ts measures it; upstream's
 * anchor, Karpenter's kwok provider at 1000 pods in under 2 minutes, is in bench/README.md).
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { kube } from "../../../automation/local/kubeClient";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PODS = 100;
/** About four to a cpx31 (4 vCPU) and three to a cpx21: some 25 nodes. */
const POD_CPU = "900m";
const NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims";
const INFLATE_PODS = "/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate";

describe("100 pending pods on the local cloud through Karpenter", function () {
  this.timeout(900_000);
  let loop: KarpenterLoop;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
    loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-hundred-")));
  });

  after(async function () {
    await loop?.stop();
  });

  it("runs them all on about 25 nodes, one server per NodeClaim, and leaves no server once they are gone", async function () {
    const started = performance.now();
    await loop.inflate(PODS, POD_CPU);
    const running = await loop.allPodsRunning(PODS);
    const seconds = (performance.now() - started) / 1000;
    const nodeClaims = await loop.list(NODECLAIMS);
    process.stderr.write(`      ${PODS} pods Running after ${seconds.toFixed(1)} s on ${nodeClaims.length} NodeClaims\n`);
    assert.ok(nodeClaims.length >= 20 && nodeClaims.length <= 40, `${nodeClaims.length} NodeClaims for ${PODS} pods of ${POD_CPU}`);
    const servers = await loop.burstServers();
    assert.equal(servers.length, nodeClaims.length, "one server per NodeClaim: none duplicated, none leaked");
    const used = new Set(running.map((p) => p.spec!.nodeName!));
    const nodeNames = new Set((await loop.list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")).map((n) => n.metadata.name));
    for (const name of used) assert.ok(nodeNames.has(name), `pod on ${name}, not a Node Karpenter launched`);

    // Every NodeClaim deleted at once once the pods are gone: consolidation would remove the empty
    // nodes a budget's share at a time, minutes for 25 of them, and the point here is what is left.
    await loop.inflate(0, POD_CPU);
    await loop.waitFor("no inflate pods", async () => ((await loop.list(INFLATE_PODS)).length === 0 ? true : undefined), 300_000);
    await kube(loop.cloud.plane.admin, "DELETE", NODECLAIMS);
    await loop.waitFor("no NodeClaims", async () => ((await loop.list(NODECLAIMS)).length === 0 ? true : undefined), 600_000);
    await loop.waitFor("no burst servers", async () => ((await loop.burstServers()).length === 0 ? true : undefined), 300_000);
  });
});
