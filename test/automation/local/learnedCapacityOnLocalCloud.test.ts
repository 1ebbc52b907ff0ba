/**
 * Learned node capacity (docs/scaling-api.md) with the real engine on the local cloud: the scaling
 * API offers an autoscaled pool's server type with the estimate until a member of it is a Ready
 * Node, then with what that Node reports: `capacitySource` switches from `estimated` to `learned`,
 * capacity is the Node's capacity and capacity - overhead its allocatable.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nodeResourcesOf } from "../../../automation/catalog/learnedCapacity";
import type { InstanceType } from "../../../automation/client/nodefleetClient";
import type { LocalCloud } from "../../../automation/local/localCloud";
import { isReady, poolNodes } from "../../support/localFleet";
import type { ServeProcess } from "../../support/serveProcess";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";
import { type LocalCloudWithServe, startLocalCloudWithServe, stopLocalCloudWithServe } from "../../support/localCloudWithServe";

const POOL = "local-burst";
const TYPE = "cpx21";

/** capacity - overhead, the allocatable Karpenter computes from an instance type. */
function offeredAllocatable(t: InstanceType) {
  const capacity = nodeResourcesOf(t.capacity)!;
  const overhead = nodeResourcesOf(t.overhead)!;
  return {
    cpuMillis: capacity.cpuMillis - overhead.cpuMillis,
    memoryMiB: capacity.memoryMiB - overhead.memoryMiB,
    pods: capacity.pods - overhead.pods,
    ephemeralStorageMiB: capacity.ephemeralStorageMiB - overhead.ephemeralStorageMiB,
  };
}

describe("learned node capacity, on the real engine against the local cloud", function () {
  this.timeout(900_000);
  let dir: string;
  let cloud: LocalCloud;
  let serve: ServeProcess | undefined;
  let started: LocalCloudWithServe | undefined;

  const offer = async () => (await serve!.client.instanceTypes()).find((t) => t.pool === POOL && t.name === TYPE);

  before(async function () {
    skipUnlessAvailable(this, missingTools(...LOCAL_CLOUD_TOOLS));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-learned-capacity-"));
    started = await startLocalCloudWithServe(dir);
    ({ cloud, serve } = started);
  });

  after(async function () {
    await stopLocalCloudWithServe(dir, started);
  });

  it("offers the estimate until the first node of the type is Ready, then what that Node reports", async function () {
    const before = await offer();
    assert.ok(before, `the API offers ${TYPE} in ${POOL}`);
    assert.equal(before.capacitySource, "estimated");

    const { node } = await serve!.client.createNode({ uniqueID: "learned-capacity-0", pool: POOL, instanceType: TYPE });
    await until(
      "the member RUNNING",
      async () => ((await serve!.client.getNode(node.nodeID)).status === "RUNNING" ? true : undefined),
      300_000,
      () => serve!.stderr().slice(-3000),
      500,
    );
    const ready = await until(
      "the member's Node Ready",
      async () => (await poolNodes(cloud, POOL)).find((n) => isReady(n) && n.spec.providerID === node.providerID),
      300_000,
    );

    // The service lists the Nodes every 15 s.
    const learned = await until(
      `${TYPE} offered as learned`,
      async () => {
        const t = await offer();
        return t?.capacitySource === "learned" ? t : undefined;
      },
      120_000,
      () => serve!.stderr().slice(-3000),
      1000,
    );
    const allocatable = nodeResourcesOf(ready.status.allocatable);
    assert.ok(allocatable, `the Node reports its allocatable: ${JSON.stringify(ready.status.allocatable)}`);
    assert.deepEqual(offeredAllocatable(learned), allocatable, "capacity - overhead is the Node's allocatable");
    assert.equal(learned.cpu, before.cpu);
    assert.equal(learned.memoryMiB, before.memoryMiB, "the instance-memory figure stays the nominal one");

    // Later creates are admitted with what was learned.
    const next = await serve!.client.createNode({ uniqueID: "learned-capacity-1", pool: POOL, instanceType: TYPE });
    assert.deepEqual(nodeResourcesOf(next.node.allocatable), allocatable);
    // Not needed beyond its admission: deleted before its run (a PENDING claim is gone at once).
    await serve!.client.deleteNode(next.node.nodeID);
  });
});
