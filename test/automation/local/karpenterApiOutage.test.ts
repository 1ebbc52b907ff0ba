/**
 * The scaling API down for 60 s in the middle of a burst (issue #36, local-cloud tests), with
 * Karpenter's real controllers and the real engine on the local cloud: `nodefleet serve` is stopped
 * (SIGTERM; the fake Hetzner API, the control plane and the controller keep running) once it has
 * answered the burst's first create (a NodeClaim has its providerID), more pods arrive while it is
 * down, and after 60 s it is started again on the same data directory and port. The burst then
 * converges: every pod Running on a Ready Node, and the fake Hetzner API's servers, the API's
 * nodes, the NodeClaims and the Nodes are one and the same set, each once (nothing leaked, nothing
 * duplicated), with no server ever created twice for one node. The garbage collector's grace is
 * 30 s so that a server the API committed for a NodeClaim Karpenter gave up on meanwhile would be
 * collected within the test rather than after it. The outage keeps the 60 s: the test
 * takes about 2 minutes in all.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, type KubeItem, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PODS = 12;
/** More pods, sent while the API is down. */
const MORE_PODS = 20;
/** How long the API stays down (the figure). */
const OUTAGE_MS = 60_000;
const NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims";
const BURST_NODES = "/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst";
const INFLATE_PODS = "/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate";

const isTrue = (item: KubeItem, type: string) => item.status?.conditions?.some((c) => c.type === type && c.status === "True") === true;
const nodeIdOf = (providerID: string) => providerID.split("/").pop()!;
const sorted = (values: Iterable<string>) => [...values].sort();

describe("the scaling API down for 60 s during a burst (Karpenter on the local cloud)", function () {
  this.timeout(1_200_000);
  let loop: KarpenterLoop;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS));
    // Servers take 5 s to boot, so the burst is under way when the API stops; no consolidation, so
    // the sets compared at the end are settled.
    loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-outage-")), {
      bootDelayMs: 5_000,
      consolidateAfter: "Never",
      instanceGcGrace: "30s",
    });
  });

  after(async function () {
    await loop?.stop();
  });

  it("converges once the API is back: every pod on a Ready Node, one server per NodeClaim, none created twice", async function () {
    await loop.inflate(PODS, "700m");
    // Stopped once the API has answered a create: its runs for the burst are then under way.
    await loop.waitFor(
      "the burst's first launched NodeClaim",
      async () => ((await loop.list(NODECLAIMS)).some((c) => c.status?.providerID) ? true : undefined),
      300_000,
    );
    const runningAtStop = (await loop.list(INFLATE_PODS)).filter((p) => p.status?.phase === "Running").length;
    assert.ok(runningAtStop < PODS, `the burst is under way when the API stops (${runningAtStop} of ${PODS} pods Running)`);
    const stopped = Date.now();
    await loop.stopApi();
    await loop.inflate(MORE_PODS, "700m");
    // The outage itself is what is tested: it lasts its full length whatever happens meanwhile.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (Date.now() - stopped))));
    await assert.rejects(fetch(loop.serve.baseUrl), "the API's port refuses connections all along");
    const runningAtRestart = (await loop.list(INFLATE_PODS)).filter((p) => p.status?.phase === "Running").length;
    assert.ok(runningAtRestart < MORE_PODS, `the burst still needs the API (${runningAtRestart} of ${MORE_PODS} pods Running)`);
    await loop.startApi();
    const restarted = Date.now();

    const running = await loop.waitFor(
      `${MORE_PODS} pods Running`,
      async () => {
        const pods = (await loop.list(INFLATE_PODS)).filter((p) => p.status?.phase === "Running");
        return pods.length === MORE_PODS ? pods : undefined;
      },
      900_000,
    );
    this.test!.title += ` (${runningAtRestart} of ${MORE_PODS} pods Running at the restart, all ${Math.round((Date.now() - restarted) / 1000)} s after)`;
    const nodes = await loop.list(BURST_NODES);
    for (const name of new Set(running.map((p) => p.spec!.nodeName!))) {
      const node = nodes.find((n) => n.metadata.name === name);
      assert.ok(node && isTrue(node, "Ready"), `pod node ${name} is a Ready Node of the burst NodePool`);
    }
    // Settled: every NodeClaim initialized and, after the collector's grace, as many servers as NodeClaims.
    const claimIds = await loop.waitFor(
      "one server per Initialized NodeClaim",
      async () => {
        const claims = await loop.list(NODECLAIMS);
        if (!claims.every((c) => isTrue(c, "Initialized"))) return undefined;
        const ids = claims.map((c) => nodeIdOf(c.status!.providerID!));
        return (await loop.burstServers()).length === ids.length ? ids : undefined;
      },
      300_000,
    );
    const serverIds = (await loop.burstServers()).map(
      (s) => s.labels["nodefleet.io/node"] ?? `(server ${s.name} without a nodefleet.io/node label)`,
    );
    assert.deepEqual(sorted(serverIds), sorted(claimIds), "one server per NodeClaim, none without one");
    assert.deepEqual(
      sorted((await loop.serve.client.listNodes()).map((n) => n.nodeID)),
      sorted(claimIds),
      "the API's nodes are the NodeClaims'",
    );
    assert.deepEqual(
      sorted((await loop.list(BURST_NODES)).map((n) => nodeIdOf(n.spec!.providerID!))),
      sorted(claimIds),
      "one Node per NodeClaim",
    );
    // Never duplicated: every server the fake ever created for the pool belongs to a distinct node.
    const created = loop.hcloudExchanges
      .filter((e) => e.method === "POST" && e.route === "/servers" && e.status === 201)
      .map((e) => (e.requestBody as { labels?: Record<string, string> }).labels ?? {})
      .filter((labels) => labels["nodefleet.io/pool"] === "local-burst")
      .map((labels) => labels["nodefleet.io/node"]);
    assert.ok(created.length >= claimIds.length && created.every((id) => id !== undefined), "each create names its node");
    assert.equal(new Set(created).size, created.length, `no node's server created twice: ${sorted(created as string[]).join(", ")}`);
  });
});
