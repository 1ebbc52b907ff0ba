/**
 * The driver's Helm charts installed with `helm install` into the local control plane, and the
 * leader of its two replicas killed mid-burst (issue #36, local-cloud tests). The control plane
 * runs no pods, so the Deployment's replicas run as local processes with the environment the
 * installed Deployment gives them, each authenticated with a TokenRequest token of the chart's
 * ServiceAccount: every call they make is allowed by the chart's RBAC or refused. One replica
 * leads (the chart's Lease); SIGKILL of it while a burst of pods is being turned into servers and
 * Nodes leaves the Lease to expire, the other replica takes it and finishes the burst: every pod
 * Running on a Ready Node, exactly one server at the fake Hetzner API per NodeClaim (none leaked,
 * none duplicated), no RBAC "forbidden" in either replica's log; then the empty nodes are
 * consolidated away by the new leader, leaving no server.
 */
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KARPENTER_NAMESPACE } from "../../../automation/local/karpenterObjects";
import type { KarpenterController } from "../../../automation/local/karpenterController";
import { kube } from "../../../automation/local/kubeClient";
import { chartDeployment } from "../../support/karpenterChart";
import { KARPENTER_LOOP_TOOLS, type KarpenterLoop, type KubeItem, startKarpenterLoop } from "../../support/karpenterLocalCloud";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PODS = 16;
const NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims";
const NODEPOOL = "/apis/karpenter.sh/v1/nodepools/burst";
const BURST_NODES = "/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst";
const INFLATE_PODS = "/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate";
/** controller-runtime's gauge of a replica holding the Lease, on its metrics port. */
const LEADING = /^leader_election_master_status\{[^}]*\} 1$/m;
/** An RBAC refusal as the API server words it (`... is forbidden: User "system:serviceaccount:..." cannot ...`). */
const FORBIDDEN = /forbidden/i;

interface Lease {
  spec: { holderIdentity?: string; leaseTransitions?: number };
}

const isTrue = (item: KubeItem, type: string) => item.status?.conditions?.some((c) => c.type === type && c.status === "True") === true;
/** The API's nodeID of a NodeClaim: the last segment of `nodefleet:///<cluster>/<nodeID>`. */
const nodeIdOf = (providerID: string) => providerID.split("/").pop()!;
const sorted = (values: Iterable<string>) => [...values].sort();
/** Whether the replica says it leads (a dead one does not). */
async function leads(controller: KarpenterController): Promise<boolean> {
  if (controller.child.exitCode !== null || controller.child.signalCode !== null) return false;
  const answer = await fetch(`http://127.0.0.1:${controller.metricsPort}/metrics`);
  return LEADING.test(await answer.text());
}

describe("the chart's two replicas under its own RBAC, the leader killed mid-burst (Karpenter on the local cloud)", function () {
  this.timeout(900_000);
  let loop: KarpenterLoop;
  let leasePath: string;

  before(async function () {
    skipUnlessAvailable(this, missingTools(...KARPENTER_LOOP_TOOLS, "helm"));
    // Servers take 5 s to boot, so the burst is still under way when the leader is killed; no
    // consolidation during the burst, so the servers and NodeClaims compared are settled.
    loop = await startKarpenterLoop(mkdtempSync(join(tmpdir(), "nodefleet-karpenter-chart-")), {
      chart: true,
      bootDelayMs: 5_000,
      consolidateAfter: "Never",
    });
  });

  after(async function () {
    await loop?.stop();
  });

  const lease = async () => (await kube(loop.cloud.plane.admin, "GET", leasePath)) as Lease;
  const forbiddenLines = () =>
    loop.controllers.flatMap((c, i) =>
      c
        .log()
        .split("\n")
        .filter((line) => FORBIDDEN.test(line))
        .map((line) => `replica ${i}: ${line}`),
    );

  it("runs the Deployment's two replicas with leader election on: one takes the chart's Lease", async function () {
    const deployment = await chartDeployment(loop.cloud.plane.admin, KARPENTER_NAMESPACE);
    assert.equal(deployment.replicas, 2, "the chart's default replicas");
    assert.equal(deployment.env.DISABLE_LEADER_ELECTION, "false");
    assert.equal(loop.controllers.length, 2);
    leasePath = `/apis/coordination.k8s.io/v1/namespaces/${deployment.env.LEADER_ELECTION_NAMESPACE}/leases/${deployment.env.LEADER_ELECTION_NAME}`;
    const holder = await loop.waitFor("a replica holding the Lease", async () => (await lease()).spec.holderIdentity || undefined, 120_000);
    assert.ok(holder);
    const leading = await loop.waitFor(
      "a replica saying it leads",
      async () => {
        const flags = await Promise.all(loop.controllers.map(leads));
        return flags.some(Boolean) ? flags : undefined;
      },
      60_000,
    );
    assert.deepEqual(leading.filter(Boolean), [true], "exactly one replica leads (leader_election_master_status): the other stands by");
    assert.deepEqual(forbiddenLines(), [], "no RBAC refusal in either replica's log");
  });

  it("finishes a burst under the other replica after the leader is killed: every pod on a Ready Node, one server per NodeClaim", async function () {
    const flags = await Promise.all(loop.controllers.map(leads));
    const leader = loop.controllers[flags.indexOf(true)]!;
    const standby = loop.controllers[flags.indexOf(false)]!;
    assert.ok(leader && standby, `one leader, one standby (${flags.join(", ")})`);
    const before = (await lease()).spec;

    await loop.inflate(PODS, "700m");
    await loop.waitFor("the leader's first NodeClaim", async () => ((await loop.list(NODECLAIMS)).length > 0 ? true : undefined), 300_000);
    const runningAtKill = (await loop.list(INFLATE_PODS)).filter((p) => p.status?.phase === "Running").length;
    assert.ok(runningAtKill < PODS, `the burst is under way when the leader is killed (${runningAtKill} of ${PODS} pods Running)`);
    // Registering and initializing the NodeClaims' Nodes is left to the standby.
    const claimsAtKill = await loop.list(NODECLAIMS);
    assert.ok(
      claimsAtKill.some((c) => !isTrue(c, "Initialized")),
      "a NodeClaim is not yet Initialized when the leader is killed",
    );
    leader.child.kill("SIGKILL");
    await leader.exited;

    // The Lease is not released by a SIGKILL: the standby takes it once it expires (15 s).
    const after = await loop.waitFor(
      "the standby holding the Lease",
      async () => {
        const spec = (await lease()).spec;
        return spec.holderIdentity && spec.holderIdentity !== before.holderIdentity && (await leads(standby)) ? spec : undefined;
      },
      180_000,
    );
    assert.equal(after.leaseTransitions, (before.leaseTransitions ?? 0) + 1, "one hand-over");

    const running = await loop.allPodsRunning(PODS);
    const claims = await loop.waitFor(
      "every NodeClaim Initialized",
      async () => {
        const all = await loop.list(NODECLAIMS);
        return all.every((c) => isTrue(c, "Initialized")) ? all : undefined;
      },
      300_000,
    );
    const nodes = await loop.list(BURST_NODES);
    const podNodes = new Set(running.map((p) => p.spec!.nodeName!));
    for (const name of podNodes) {
      const node = nodes.find((n) => n.metadata.name === name);
      assert.ok(node, `pod node ${name} is a Node of the burst NodePool`);
      assert.ok(isTrue(node, "Ready"), `Node ${name} is Ready`);
      assert.ok(!(node.spec!.taints ?? []).some((t) => t.key === "karpenter.sh/unregistered"), `Node ${name} is registered`);
    }

    // Nothing leaked, nothing duplicated: the fake's servers, the API's nodes, the NodeClaims and the
    // Nodes are the same set, each once.
    const claimIds = claims.map((c) => nodeIdOf(c.status!.providerID!));
    const servers = await loop.burstServers();
    const serverIds = servers.map((s) => s.labels["nodefleet.io/node"] ?? `(server ${s.name} without a nodefleet.io/node label)`);
    assert.equal(new Set(serverIds).size, serverIds.length, `no two servers for one node: ${sorted(serverIds).join(", ")}`);
    assert.deepEqual(sorted(serverIds), sorted(claimIds), "one server per NodeClaim, none without one");
    assert.deepEqual(
      sorted((await loop.serve.client.listNodes()).map((n) => n.nodeID)),
      sorted(claimIds),
      "the API's nodes are the NodeClaims'",
    );
    assert.deepEqual(sorted(nodes.map((n) => nodeIdOf(n.spec!.providerID!))), sorted(claimIds), "one Node per NodeClaim");
    assert.deepEqual(forbiddenLines(), [], "no RBAC refusal in either replica's log");
  });

  it("consolidates the empty nodes away under the new leader: no NodeClaim, server or Node left", async function () {
    await kube(loop.cloud.plane.admin, "DELETE", "/apis/apps/v1/namespaces/default/deployments/inflate");
    await kube(
      loop.cloud.plane.admin,
      "PATCH",
      NODEPOOL,
      { spec: { disruption: { consolidateAfter: "0s" } } },
      "application/merge-patch+json",
    );
    await loop.waitFor("no NodeClaims", async () => ((await loop.list(NODECLAIMS)).length === 0 ? true : undefined), 600_000);
    await loop.waitFor("no burst servers", async () => ((await loop.burstServers()).length === 0 ? true : undefined), 120_000);
    await loop.waitFor("no burst Nodes", async () => ((await loop.list(BURST_NODES)).length === 0 ? true : undefined), 120_000);
    assert.deepEqual(forbiddenLines(), [], "no RBAC refusal in either replica's log");
  });
});
