/**
 * The drain that runs before a server is deleted, against the real kube-apiserver of the local
 * control plane (with kube-controller-manager, whose disruption controller keeps the
 * PodDisruptionBudget's status): no kubelet runs, so pods are created bound to a Node
 * (spec.nodeName) and marked Ready through their status, and eviction and budget checks are the
 * API server's own.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { KubernetesCredentials } from "../../components/kubernetes/kubernetesApiClient";
import {
  drainKubernetesNode,
  drainSelection,
  nodeDrainProvider,
  nodeUpdateDrainProvider,
} from "../../components/kubernetes/kubernetesNodeDrain";
import { readyClusterNodeNames } from "../../components/kubernetes/nodeReadiness";
import { readFileSync } from "node:fs";
import { type ControlPlane, startControlPlane } from "../../automation/local/controlPlane";
import { KubeApiError, kube } from "../../automation/local/kubeClient";
import { withSerializedProvider } from "../support/serializedProvider";
import { missingTools, skipUnlessAvailable } from "../support/toolchainRequirement";

describe("drainSelection", () => {
  it("evicts ordinary pods by priority, leaving DaemonSet and mirror pods", () => {
    const pod = (name: string, extra: Record<string, unknown> = {}, spec: Record<string, unknown> = {}) => ({
      metadata: { name, namespace: "ns", uid: `uid-${name}`, ...extra },
      spec,
    });
    const selection = drainSelection({
      items: [
        pod("web", {}, { priority: 1000 }),
        pod("batch", {}, { priority: -10 }),
        pod("agent", { ownerReferences: [{ kind: "DaemonSet", controller: true }] }),
        pod("static", { annotations: { "kubernetes.io/config.mirror": "abc" } }),
        pod("owned-by-rs", {
          ownerReferences: [
            { kind: "ReplicaSet", controller: true },
            { kind: "DaemonSet", controller: false },
          ],
        }),
        { metadata: { name: "no-namespace" } },
      ],
    });
    assert.deepEqual(
      selection.evict.map((p) => p.name),
      ["batch", "owned-by-rs", "web"],
    );
    assert.deepEqual(
      selection.skipped.map((p) => [p.name, p.reason]),
      [
        ["agent", "daemonset"],
        ["static", "mirror"],
      ],
    );
    assert.deepEqual(drainSelection(null), { evict: [], skipped: [] });
  });
});

describe("drainKubernetesNode on a real control plane", function () {
  this.timeout(300_000);
  let dir: string;
  let plane: ControlPlane;
  let credentials: string;
  const NS = "drain-test";
  const NODE = "drain-a";

  const get = (path: string) =>
    kube(plane.admin, "GET", path).catch((e: unknown) => (e instanceof KubeApiError && e.status === 404 ? undefined : Promise.reject(e)));
  const podNames = async () =>
    (
      (await kube(plane.admin, "GET", `/api/v1/pods?fieldSelector=spec.nodeName%3D${NODE}`)) as {
        items: Array<{ metadata: { name: string } }>;
      }
    ).items
      .map((p) => p.metadata.name)
      .sort();
  async function until<T>(what: string, probe: () => Promise<T | undefined>, ms = 90_000): Promise<T> {
    const end = Date.now() + ms;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  async function readyPod(name: string, labels: Record<string, string>, metadata: Record<string, unknown> = {}, nodeName = NODE) {
    await kube(plane.admin, "POST", `/api/v1/namespaces/${NS}/pods`, {
      metadata: { name, labels, ...metadata },
      spec: { nodeName, terminationGracePeriodSeconds: 0, containers: [{ name: "c", image: "registry.invalid/pause:1" }] },
    });
    const now = new Date().toISOString();
    await kube(plane.admin, "PATCH", `/api/v1/namespaces/${NS}/pods/${name}/status`, {
      status: {
        phase: "Running",
        conditions: [
          { type: "Ready", status: "True", lastTransitionTime: now },
          { type: "PodScheduled", status: "True", lastTransitionTime: now },
        ],
      },
    });
  }

  before(async function () {
    skipUnlessAvailable(this, missingTools("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-drain-"));
    plane = await startControlPlane({ dir: join(dir, "control-plane") });
    const creds: KubernetesCredentials = {
      server: plane.server,
      caPem: plane.admin.caPem,
      clientCertPem: plane.admin.certPem,
      clientKeyPem: plane.admin.keyPem,
    };
    credentials = JSON.stringify(creds);

    await kube(plane.admin, "POST", "/api/v1/namespaces", { metadata: { name: NS } });
    await until("the namespace's default service account", async () =>
      (await get(`/api/v1/namespaces/${NS}/serviceaccounts/default`)) ? true : undefined,
    );
    await kube(plane.admin, "POST", "/api/v1/nodes", { metadata: { name: NODE, labels: { "drain-test": "true" } } });
    const now = new Date().toISOString();
    await kube(plane.admin, "PATCH", `/api/v1/nodes/${NODE}/status`, {
      status: {
        capacity: { cpu: "4", memory: "8Gi", pods: "110" },
        allocatable: { cpu: "4", memory: "8Gi", pods: "110" },
        conditions: [
          { type: "Ready", status: "True", reason: "KubeletReady", message: "test", lastHeartbeatTime: now, lastTransitionTime: now },
        ],
      },
    });
    // A real DaemonSet: its controller makes the pod and the scheduler binds it to the Node.
    await kube(plane.admin, "POST", `/apis/apps/v1/namespaces/${NS}/daemonsets`, {
      metadata: { name: "agent" },
      spec: {
        selector: { matchLabels: { app: "agent" } },
        template: {
          metadata: { labels: { app: "agent" } },
          spec: { nodeSelector: { "drain-test": "true" }, containers: [{ name: "c", image: "registry.invalid/pause:1" }] },
        },
      },
    });
    // A mirror pod, as a kubelet would register for a static pod.
    await kube(plane.admin, "POST", `/api/v1/namespaces/${NS}/pods`, {
      metadata: { name: "static-proxy", annotations: { "kubernetes.io/config.mirror": "0123abcd", "kubernetes.io/config.source": "file" } },
      spec: { nodeName: NODE, containers: [{ name: "c", image: "registry.invalid/pause:1" }] },
    });
    await readyPod("solo", { app: "solo" });
    await readyPod("web-1", { app: "web" });
    await readyPod("web-2", { app: "web" });
    await kube(plane.admin, "POST", `/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets`, {
      metadata: { name: "web" },
      spec: { minAvailable: 1, selector: { matchLabels: { app: "web" } } },
    });
    await until("the DaemonSet pod on the Node", async () => ((await podNames()).some((n) => n.startsWith("agent-")) ? true : undefined));
    await until("the budget to allow one disruption", async () => {
      const pdb = (await get(`/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets/web`)) as {
        status?: { disruptionsAllowed?: number; currentHealthy?: number };
      };
      return pdb.status?.disruptionsAllowed === 1 && pdb.status.currentHealthy === 2 ? true : undefined;
    });
  });

  after(async function () {
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("cordons, evicts what the budget allows, and fails at the deadline naming the pod the budget protects, uncordoning the Node again", async () => {
    // What the Node looked like while the drain ran: cordoned before the first eviction, until it failed.
    const seen: Array<{ unschedulable: boolean; pods: number }> = [];
    let draining = true;
    const watch = (async () => {
      while (draining) {
        const node = (await get(`/api/v1/nodes/${NODE}`)) as { spec: { unschedulable?: boolean } };
        seen.push({ unschedulable: node.spec.unschedulable === true, pods: (await podNames()).length });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    await assert.rejects(
      drainKubernetesNode(credentials, NODE, { timeoutSeconds: 6, pollIntervalMs: 500 }).finally(() => (draining = false)),
      (e: Error) =>
        /draining Kubernetes Node drain-a did not finish within 6 s, so its server is kept and the rollout stops/.test(e.message) &&
        /drain-test\/web-2 \(eviction refused: .*disruption budget/i.test(e.message) &&
        /the Node is schedulable again/.test(e.message) &&
        !e.message.includes("BEGIN"),
    );
    await watch;
    const cordonedAt = seen.findIndex((s) => s.unschedulable);
    assert.ok(cordonedAt >= 0, "cordoned while draining");
    assert.ok(
      seen.slice(0, cordonedAt).every((s) => s.pods === seen[0]!.pods),
      "no pod left before the Node was cordoned",
    );
    const node = (await get(`/api/v1/nodes/${NODE}`)) as { spec: { unschedulable?: boolean } };
    assert.notEqual(
      node.spec.unschedulable,
      true,
      "a failed drain gives the Node back to the scheduler (a reverted rollout leaves no cordon behind)",
    );
    const left = await podNames();
    assert.ok(!left.includes("solo"), "a pod without a budget is evicted");
    assert.ok(!left.includes("web-1"), "the budget allows one of the two web pods to go");
    assert.ok(left.includes("web-2"), "the budget keeps the other");
    assert.ok(left.includes("static-proxy"), "mirror pods are left");
    assert.ok(
      left.some((n) => n.startsWith("agent-")),
      "DaemonSet pods are left",
    );
  });

  it("finishes once the budget allows it, from its serialized provider as the engine runs it on delete", async () => {
    await kube(plane.admin, "DELETE", `/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets/web`);
    await withSerializedProvider(nodeDrainProvider, async (provider) => {
      await provider.delete!(NODE, { nodeName: NODE, timeoutSeconds: 60, credentials });
    });
    const left = await podNames();
    assert.ok(!left.includes("web-2"));
    assert.deepEqual(
      left.filter((n) => !n.startsWith("agent-")),
      ["static-proxy"],
    );
    const result = await drainKubernetesNode(credentials, NODE, { timeoutSeconds: 10 });
    assert.deepEqual(result.evicted, [], "a drained Node has nothing left to evict");
    assert.equal(result.skipped.length, 2);
  });

  it("drains on create before a bare-metal update, from its serialized provider; deleting that record changes nothing", async () => {
    await kube(plane.admin, "POST", "/api/v1/nodes", { metadata: { name: "metal-update" } });
    await withSerializedProvider(nodeUpdateDrainProvider, async (provider) => {
      const inputs = { nodeName: "metal-update", generation: "bbbbbb", timeoutSeconds: 30, credentials };
      assert.equal((await provider.create(inputs)).id, "metal-update-bbbbbb");
      const node = (await get("/api/v1/nodes/metal-update")) as { spec?: { unschedulable?: boolean } };
      assert.equal(node.spec?.unschedulable, true, "cordoned before the reinstall or re-join");
      await kube(plane.admin, "PATCH", "/api/v1/nodes/metal-update", { spec: { unschedulable: false } });
      await provider.delete!("metal-update-bbbbbb", inputs);
    });
    const after = (await get("/api/v1/nodes/metal-update")) as { spec?: { unschedulable?: boolean } };
    assert.notEqual(after.spec?.unschedulable, true, "the delete did not drain again");
  });

  it("leaves an operator's cordon in place when a drain fails", async () => {
    await kube(plane.admin, "POST", "/api/v1/nodes", { metadata: { name: "cordoned-by-hand" }, spec: { unschedulable: true } });
    await readyPod("guarded", { app: "guarded" }, {}, "cordoned-by-hand");
    await kube(plane.admin, "POST", `/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets`, {
      metadata: { name: "guarded" },
      spec: { maxUnavailable: 0, selector: { matchLabels: { app: "guarded" } } },
    });
    await assert.rejects(
      drainKubernetesNode(credentials, "cordoned-by-hand", { timeoutSeconds: 3, pollIntervalMs: 500 }),
      (e: Error) => !/schedulable again/.test(e.message),
    );
    const node = (await get("/api/v1/nodes/cordoned-by-hand")) as { spec: { unschedulable?: boolean } };
    assert.equal(node.spec.unschedulable, true, "cordoned before the drain, cordoned after it");
  });

  it("treats a Node that is already gone as drained", async () => {
    assert.deepEqual(await drainKubernetesNode(credentials, "never-registered", { timeoutSeconds: 5 }), { evicted: [], skipped: [] });
  });

  // What a rollout waits for, read from the same API server: the cluster's own Ready Nodes.
  it("reads which of the cluster's Nodes are Ready (what the rollout waits for)", async () => {
    const now = new Date().toISOString();
    for (const [name, cluster, ready] of [
      ["rollout-ready", "example", "True"],
      ["rollout-booting", "example", "False"],
      ["other-cluster", "other", "True"],
    ] as const) {
      await kube(plane.admin, "POST", "/api/v1/nodes", { metadata: { name, labels: { "nodefleet.io/cluster": cluster } } });
      await kube(plane.admin, "PATCH", `/api/v1/nodes/${name}/status`, {
        status: {
          conditions: [{ type: "Ready", status: ready, reason: "Test", message: "test", lastHeartbeatTime: now, lastTransitionTime: now }],
        },
      });
    }
    const ready = await readyClusterNodeNames(readFileSync(plane.adminKubeconfig, "utf8"), "example");
    assert.deepEqual([...ready].sort(), ["rollout-ready"]);
  });

  it("fails clearly without a usable kubeconfig", async () => {
    await assert.rejects(
      drainKubernetesNode("", NODE, { timeoutSeconds: 5 }),
      /cannot drain Kubernetes Node drain-a: no usable kubeconfig/,
    );
  });
});
