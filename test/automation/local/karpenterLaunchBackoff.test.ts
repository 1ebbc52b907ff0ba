/**
 * A quota failure with Karpenter's controllers on the local cloud (issue 36 part 3): the fake
 * Hetzner API refuses the pool's cheapest type as over the project's quota. Karpenter must launch
 * the other type at once, with no relaunch storm (Hetzner asked for the refused type only by the
 * first wave; the API refuses the rest at admission, before any engine run), an OfferingUnavailable
 * Event and the NodeClass's OfferingsAvailable condition naming the quota; once the quota is lifted
 * and the API's backoff (NODEFLEET_BACKOFF_FOR_MS, 60 s here) ends, the cheap type is launched again.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { kube } from "../../../automation/local/kubeClient";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const BURST_NODES = "/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst";
const NODECLASS = "/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses/default";
const BACKOFF_MS = 60_000;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

describe("a quota failure with Karpenter on the local cloud", function () {
  this.timeout(900_000);
  let loop: KarpenterLoop;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
    loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-quota-")), {
      serveEnv: { NODEFLEET_BACKOFF_FOR_MS: String(BACKOFF_MS) },
    });
  });

  after(async function () {
    await loop?.stop();
  });

  const offeringsCondition = async () =>
    ((await kube(loop.cloud.plane.admin, "GET", NODECLASS)) as { status?: { conditions?: Condition[] } }).status?.conditions?.find(
      (c) => c.type === "OfferingsAvailable",
    );
  /** Creates Hetzner was asked for, of one server type. */
  const hetznerCreates = (serverType: string) =>
    loop.hcloudExchanges.filter(
      (e) => e.method === "POST" && e.route === "/servers" && (e.requestBody as { server_type?: string }).server_type === serverType,
    ).length;

  it("launches the other type at once, asks Hetzner for the refused one no more, and says why in an Event and the NodeClass", async function () {
    loop.cloud.hcloud.setQuotaExceeded(["cpx21"]);
    await loop.inflate(6, "700m");
    const running = await loop.allPodsRunning(6);
    const nodes = new Set(running.map((p) => p.spec!.nodeName!));
    for (const node of (await loop.list(BURST_NODES)).filter((n) => nodes.has(n.metadata.name))) {
      assert.equal(node.metadata.labels!["node.kubernetes.io/instance-type"], "cpx31", `${node.metadata.name}: not the type over quota`);
    }
    const refused = hetznerCreates("cpx21");
    assert.ok(refused >= 1, "Karpenter tried the cheapest type first, so the quota was met");

    const event = await loop.waitFor("an OfferingUnavailable Event on the NodeClass", async () => {
      const events = (await kube(
        loop.cloud.plane.admin,
        "GET",
        "/api/v1/events?fieldSelector=reason%3DOfferingUnavailable%2CinvolvedObject.kind%3DNodefleetNodeClass",
      )) as { items: Array<{ message: string; type: string }> };
      return events.items[0];
    });
    assert.equal(event.type, "Warning");
    assert.match(event.message, /cpx21 in hel1/);
    assert.match(event.message, /resource_limit_exceeded/);

    const condition = await loop.waitFor("OfferingsAvailable False", async () => {
      const c = await offeringsCondition();
      return c?.status === "False" ? c : undefined;
    });
    assert.equal(condition.reason, "LaunchBackoff");
    assert.match(condition.message ?? "", /cpx21 in hel1 until \S+ \(.*resource_limit_exceeded/);

    // No relaunch storm: more pods while the type is backed off go to cpx31 without Hetzner being
    // asked for cpx21 again.
    await loop.inflate(10, "700m");
    await loop.allPodsRunning(10);
    assert.equal(hetznerCreates("cpx21"), refused, "Hetzner was asked for the backed-off type again");
  });

  it("launches the cheap type again once the quota is lifted and the backoff has ended", async function () {
    loop.cloud.hcloud.setQuotaExceeded([]);
    await loop.inflate(0, "700m");
    await loop.waitFor(
      "no NodeClaims",
      async () => ((await loop.list("/apis/karpenter.sh/v1/nodeclaims")).length === 0 ? true : undefined),
      600_000,
    );
    const condition = await loop.waitFor(
      "OfferingsAvailable True",
      async () => {
        const c = await offeringsCondition();
        return c?.status === "True" ? c : undefined;
      },
      BACKOFF_MS + 120_000,
    );
    assert.equal(condition.status, "True");
    // Let the driver's cached instance types (15 s) catch up with the API's.
    await new Promise((resolve) => setTimeout(resolve, 16_000));
    await loop.inflate(2, "700m");
    const running = await loop.allPodsRunning(2);
    const types = (await loop.list(BURST_NODES))
      .filter((n) => running.some((p) => p.spec!.nodeName === n.metadata.name))
      .map((n) => n.metadata.labels!["node.kubernetes.io/instance-type"]);
    assert.ok(types.includes("cpx21"), `the pods run on ${types.join(", ")}, want the cheap cpx21 again`);
  });
});
