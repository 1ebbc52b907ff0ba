/**
 * A type sold out in one location, created in another, with Karpenter's controllers on the local
 * cloud (issue #39 part 2): the burst pool lists hel1 and fsn1, and the fake Hetzner API has cpx21
 * sold out in hel1 only (NODEFLEET_SIM_OUT_OF_STOCK cpx21@hel1). The scaling API offers cpx21 per
 * location (Karpenter's zone), so Karpenter launches the cheap type in fsn1 and Hetzner is never
 * asked for a cpx21 in hel1. The same through the API alone: locationsOnLocalCloud.test.ts.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { editLocalPools } from "../../support/localFleet";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const BURST_NODES = "/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst";

describe("a type sold out in one location, with Karpenter on the local cloud", function () {
  this.timeout(900_000);
  let loop: KarpenterLoop;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
    loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-locations-")), {
      outOfStock: "cpx21@hel1",
      prepare: (cloud) =>
        editLocalPools(cloud, (pools) =>
          pools.map((p) => {
            if (p.name !== "local-burst") return p;
            const { location: _location, ...rest } = p;
            return { ...rest, locations: ["hel1", "fsn1"] };
          }),
        ),
    });
  });

  after(async function () {
    await loop?.stop();
  });

  it("launches the cheap type in the other location and never asks Hetzner for it where it is sold out", async function () {
    await loop.inflate(2, "700m");
    const running = await loop.allPodsRunning(2);
    const used = new Set(running.map((p) => p.spec!.nodeName!));
    const nodes = (await loop.list(BURST_NODES)).filter((n) => used.has(n.metadata.name));
    const placed = nodes.map(
      (n) => `${n.metadata.labels!["node.kubernetes.io/instance-type"]}@${n.metadata.labels!["topology.kubernetes.io/zone"]}`,
    );
    assert.ok(placed.length > 0, "the pods run on burst nodes");
    assert.ok(placed.includes("cpx21@fsn1"), `the cheapest type, where it is sold: ${placed.join(", ")}`);
    assert.ok(!placed.includes("cpx21@hel1"), placed.join(", "));
    const askedInHel1 = loop.hcloudExchanges.filter((e) => {
      const body = e.requestBody as { server_type?: string; location?: string } | undefined;
      return e.method === "POST" && e.route === "/servers" && body?.server_type === "cpx21" && body.location === "hel1";
    });
    assert.equal(askedInHel1.length, 0, "no create of cpx21 in hel1 reached Hetzner");
  });
});
