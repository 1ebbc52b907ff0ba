/**
 * Karpenter's own controllers scaling the local cloud, end to end with real parts only but the
 * machines and the Hetzner API: the toolchain's `nodefleet-karpenter` (Karpenter v1.14.1's core
 * controllers with nodefleet's driver) against the real control plane, `nodefleet serve --engine
 * automation` on the local stack, kube-scheduler binding pods, and the node agent registering Nodes.
 * 20 pending pods become NodeClaims, servers in the fake API, Nodes without the unregistered taint
 * and 20 Running pods; the cheapest type is sold out, so Karpenter must use another one; deleting the
 * pods consolidates the nodes away and releases every finalizer. Then, with one pod on each of three
 * new nodes and a disruption budget of `nodes: "1"`, two template changes each drift all three and
 * have them replaced one at a time by NodeClaims of the new template: a NodePool template label
 * (Karpenter's static drift), then the pool's labels in the stack file (the API's drift, which the
 * driver's IsDrifted reports; the NodeClass's recorded template hash makes Karpenter look at once).
 * Last, the NodeClass deleted while three nodes run: the driver deletes their NodeClaims, Karpenter
 * drains them and deletes their servers through the still present NodeClass, then its finalizer
 * lifts, and nothing is left in the fake Hetzner API.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeApiError, kube } from "../../../automation/local/kubeClient";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, type KubeItem, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { hcloudOpenApiViolations } from "../../support/hcloudOpenApi";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PODS = 20;
const DRIFTING = 3;
/** A drift case's deadline (scheduling, three replacements, the old servers' deletion) on a busy machine. */
const DRIFT_CASE_TIMEOUT_MS = 2_400_000;
const NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims";
const NODEPOOL = "/apis/karpenter.sh/v1/nodepools/burst";
const NODECLASS = "/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses/default";
const INFLATE_PODS = "/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate";
/** Set in the NodePool's template (Karpenter's static drift). */
const NODEPOOL_LABEL = "example.com/nodepool-template";
/** Set in the burst pool's labels in the stack file (the API's drift). */
const POOL_LABEL = "example.com/pool-template";

const condition = (item: KubeItem, type: string) => item.status?.conditions?.find((c) => c.type === type);
const isTrue = (item: KubeItem, type: string) => condition(item, type)?.status === "True";
/** The API's nodeID, the last segment of `nodefleet:///<cluster>/<nodeID>`. */
const nodeIdOf = (nodeClaim: KubeItem) => nodeClaim.status!.providerID!.split("/").pop()!;
/**
 * Disrupting as Karpenter's budget counts it: picked by a disruption command (DisruptionReason) or
 * deleting, until the cloud has accepted the instance's deletion (InstanceTerminating).
 */
const disrupting = (nodeClaim: KubeItem) =>
  (isTrue(nodeClaim, "DisruptionReason") || nodeClaim.metadata.deletionTimestamp !== undefined) &&
  !isTrue(nodeClaim, "InstanceTerminating");

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
    const running = await loop.waitFor(
      `${PODS} pods Running`,
      async () => {
        const pods = (await loop.list("/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate")).filter(
          (p) => p.status?.phase === "Running",
        );
        return pods.length === PODS ? pods : undefined;
      },
      600_000,
    );
    const nodeClaims = await loop.list("/apis/karpenter.sh/v1/nodeclaims");
    assert.ok(nodeClaims.length >= 3 && nodeClaims.length <= 6, `${nodeClaims.length} NodeClaims for ${PODS} pods of 700m`);
    const nodes = new Set(running.map((p) => p.spec!.nodeName!));
    const registered = (await loop.list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")).filter((n) =>
      nodes.has(n.metadata.name),
    );
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
    await loop.waitFor(
      "no NodeClaims",
      async () => ((await loop.list("/apis/karpenter.sh/v1/nodeclaims")).length === 0 ? true : undefined),
      600_000,
    );
    await loop.waitFor("no burst servers", async () => ((await loop.burstServers()).length === 0 ? true : undefined), 120_000);
    await loop.waitFor(
      "no burst Nodes",
      async () => ((await loop.list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")).length === 0 ? true : undefined),
      120_000,
    );
  });

  it("replaces the nodes a NodePool template change drifted one at a time (budget nodes: 1) by NodeClaims of the new template", async function () {
    this.timeout(DRIFT_CASE_TIMEOUT_MS);
    // Budgets are not part of the template's hash: this alone drifts nothing.
    await mergePatch(NODEPOOL, { spec: { disruption: { budgets: [{ nodes: "1" }] } } });
    // One pod of 2 CPUs per cpx31 (allocatable under 4 CPUs): a drifted node's pod fits only on a replacement.
    await loop.inflate(DRIFTING, "2");
    await loop.waitFor(
      `${DRIFTING} pods Running on ${DRIFTING} nodes`,
      async () => {
        const pods = (await loop.list(INFLATE_PODS)).filter((p) => p.status?.phase === "Running");
        return pods.length === DRIFTING && new Set(pods.map((p) => p.spec!.nodeName)).size === DRIFTING ? true : undefined;
      },
      600_000,
    );
    await replacedOneByOne({
      change: () => mergePatch(NODEPOOL, { spec: { template: { metadata: { labels: { [NODEPOOL_LABEL]: "v2" } } } } }),
      reason: "NodePoolDrifted",
      newLabel: [NODEPOOL_LABEL, "v2"],
    });
  });

  it("replaces the nodes the API reports drifted after the pool's labels changed in the stack file, one at a time, through the driver's IsDrifted", async function () {
    this.timeout(DRIFT_CASE_TIMEOUT_MS);
    const templateHash = async () =>
      ((await kube(loop.cloud.plane.admin, "GET", NODECLASS)) as { status?: { poolTemplateHash?: string } }).status?.poolTemplateHash;
    const before = await templateHash();
    assert.match(before ?? "", /^[0-9a-f]{16}$/, "the NodeClass records the pool's template hash");
    await replacedOneByOne({
      change: async () => loop.editBurstPool((pool) => (pool.labels = { ...(pool.labels as object), [POOL_LABEL]: "v2" })),
      reason: "LabelsDrift",
      newLabel: [POOL_LABEL, "v2"],
    });
    // The NodeClass update is what has Karpenter re-check drift before its periodic re-check.
    assert.notEqual(await templateHash(), before, "the NodeClass follows the changed template");
  });

  const mergePatch = (path: string, body: object) => kube(loop.cloud.plane.admin, "PATCH", path, body, "application/merge-patch+json");

  /**
   * Makes `change` to the template of the DRIFTING one-pod nodes running now and follows, poll by
   * poll, Karpenter marking them Drifted (`reason`) and replacing them: never more than one at once,
   * each by a NodeClaim carrying `newLabel`, the pods Running on the replacements, the old Nodes and
   * servers gone.
   */
  async function replacedOneByOne(options: { change: () => Promise<unknown>; reason: string; newLabel: [string, string] }) {
    const [labelKey, labelValue] = options.newLabel;
    const old = new Map((await loop.list(NODECLAIMS)).map((c) => [c.metadata.name, c]));
    assert.equal(old.size, DRIFTING, "one NodeClaim per pod");
    const oldNodes = new Set([...old.values()].map((c) => c.status!.nodeName));
    const oldNodeIds = new Set([...old.values()].map(nodeIdOf));
    assert.equal(
      (await loop.burstServers()).filter((s) => oldNodeIds.has(s.labels["nodefleet.io/node"]!)).length,
      DRIFTING,
      "a server per NodeClaim",
    );

    const started = Date.now();
    await options.change();

    const drifted = new Map<string, string | undefined>();
    const replaced: string[] = [];
    const timeline: string[] = [];
    let mostAtOnce = 0;
    const current = await loop.waitFor(
      `every ${options.reason} NodeClaim replaced`,
      async () => {
        const claims = await loop.list(NODECLAIMS);
        const remaining = claims.filter((c) => old.has(c.metadata.name));
        for (const c of remaining) {
          if (isTrue(c, "Drifted") && !drifted.has(c.metadata.name)) drifted.set(c.metadata.name, condition(c, "Drifted")!.reason);
        }
        const now = remaining.filter(disrupting).map((c) => c.metadata.name);
        for (const name of now) if (!replaced.includes(name)) replaced.push(name);
        mostAtOnce = Math.max(mostAtOnce, now.length);
        const step = `${claims.length} NodeClaims, ${drifted.size} seen drifted, replacing [${now.join(", ")}], old left ${remaining.length}`;
        if (timeline.at(-1)?.endsWith(step) !== true) timeline.push(`${Math.round((Date.now() - started) / 1000)}s: ${step}`);
        return remaining.length === 0 ? claims : undefined;
      },
      1_200_000,
    );
    const story = `\n${timeline.join("\n")}`;

    assert.deepEqual([...drifted.keys()].sort(), [...old.keys()].sort(), `every old NodeClaim observed Drifted${story}`);
    for (const [name, reason] of drifted) assert.equal(reason, options.reason, `why ${name} drifted`);
    assert.equal(replaced.length, DRIFTING, `every old NodeClaim observed being replaced${story}`);
    assert.equal(mostAtOnce, 1, `never more than one drifted NodeClaim replaced at once${story}`);
    assert.equal(current.length, DRIFTING, `one replacement per drifted NodeClaim${story}`);
    for (const c of current) {
      assert.equal(c.metadata.labels?.[labelKey], labelValue, `${c.metadata.name} has the new template`);
      assert.ok(!isTrue(c, "Drifted"), `${c.metadata.name} is not drifted`);
    }

    const newNodes = new Set(current.map((c) => c.status!.nodeName));
    await loop.waitFor(
      `${DRIFTING} pods Running on the replacements`,
      async () => {
        const pods = (await loop.list(INFLATE_PODS)).filter((p) => p.status?.phase === "Running");
        return pods.length === DRIFTING && pods.every((p) => newNodes.has(p.spec!.nodeName)) ? true : undefined;
      },
      600_000,
    );
    for (const node of await loop.list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")) {
      assert.ok(!oldNodes.has(node.metadata.name), `old Node ${node.metadata.name} is gone`);
      assert.equal(node.metadata.labels?.[labelKey], labelValue, `Node ${node.metadata.name} carries the new template's label`);
    }
    await loop.waitFor(
      "the old servers gone from the fake API",
      async () => ((await loop.burstServers()).some((s) => oldNodeIds.has(s.labels["nodefleet.io/node"]!)) ? undefined : true),
      120_000,
    );
  }

  it("deleting the NodeClass while its nodes run: the driver has Karpenter drain and delete them, then the finalizer lifts, no server left", async function () {
    this.timeout(DRIFT_CASE_TIMEOUT_MS);
    await loop.inflate(DRIFTING, "2");
    await loop.waitFor(
      `${DRIFTING} pods Running`,
      async () => ((await loop.list(INFLATE_PODS)).filter((p) => p.status?.phase === "Running").length === DRIFTING ? true : undefined),
      600_000,
    );
    assert.ok((await loop.list(NODECLAIMS)).length > 0, "nodes run");
    const nodeClass = (await kube(loop.cloud.plane.admin, "GET", NODECLASS)) as KubeItem;
    assert.ok(
      nodeClass.metadata.finalizers?.includes("karpenter.nodefleet.io/termination"),
      "the NodeClass carries the driver's finalizer",
    );

    await kube(loop.cloud.plane.admin, "DELETE", NODECLASS);
    await loop.waitFor(
      "the NodeClass gone",
      async () => {
        try {
          await kube(loop.cloud.plane.admin, "GET", NODECLASS);
          return undefined;
        } catch (error) {
          if (error instanceof KubeApiError && error.status === 404) return true;
          throw error;
        }
      },
      1_200_000,
    );
    // It went only after its NodeClaims, whose Nodes and servers Karpenter deleted first.
    assert.deepEqual(await loop.list(NODECLAIMS), [], "no NodeClaim outlives its NodeClass");
    await loop.waitFor(
      "no burst Node left",
      async () => ((await loop.list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")).length === 0 ? true : undefined),
      120_000,
    );
    await loop.waitFor(
      "no server left in the fake API",
      async () => ((await loop.burstServers()).length === 0 ? true : undefined),
      120_000,
    );
    // While it waited, it said why (an Event is kept for an hour, however short the wait was).
    const waited = (await kube(
      loop.cloud.plane.admin,
      "GET",
      "/api/v1/events?fieldSelector=reason%3DWaitingOnNodeClaimTermination%2CinvolvedObject.kind%3DNodefleetNodeClass",
    )) as { items: Array<{ involvedObject: { name: string }; message: string }> };
    assert.ok(
      waited.items.some((e) => e.involvedObject.name === "default" && /NodeClaims? /.test(e.message)),
      `a WaitingOnNodeClaimTermination Event names the NodeClaims: ${JSON.stringify(waited.items)}`,
    );
  });

  it("exchanged with the fake Hetzner API only what Hetzner's OpenAPI document allows, all along the loop", function () {
    assert.ok(loop.hcloudExchanges.length > 50, `${loop.hcloudExchanges.length} exchanges`);
    assert.deepEqual(loop.hcloudExchanges.flatMap(hcloudOpenApiViolations), []);
  });
});
