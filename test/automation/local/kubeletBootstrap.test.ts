/**
 * The local cloud's control plane is a real one (toolchain binaries), and a node joins it the way a
 * kubelet does: with a bootstrap token Secret of the shape nodefleet writes, a CSR approved and
 * signed by kube-controller-manager, and its Node registered under NodeRestriction; it then runs the
 * pods bound to it and confirms their deletion.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlane, startControlPlane } from "../../../automation/local/controlPlane";
import { type KubeIdentity, kube } from "../../../automation/local/kubeClient";
import { KubeletJoinError, joinAsKubelet } from "../../../automation/local/kubeletBootstrap";
import { syncNodePods } from "../../../automation/local/kubeletPods";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

function bootstrapTokenSecret(id: string, secret: string, expiration: Date) {
  return {
    apiVersion: "v1",
    kind: "Secret",
    type: "bootstrap.kubernetes.io/token",
    metadata: { name: `bootstrap-token-${id}`, namespace: "kube-system" },
    stringData: {
      "token-id": id,
      "token-secret": secret,
      expiration: expiration.toISOString().replace(/\.\d{3}Z$/, "Z"),
      description: "test",
      "usage-bootstrap-authentication": "true",
    },
  };
}

describe("local control plane and kubelet bootstrap (real kube-apiserver)", function () {
  this.timeout(180_000);
  let dir: string;
  let plane: ControlPlane;

  before(async function () {
    skipUnlessAvailable(this, missingTools("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-control-plane-"));
    plane = await startControlPlane({ dir: join(dir, "control-plane") });
  });

  after(async function () {
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const join_ = (token: string, nodeName: string, labels: Record<string, string> = {}) =>
    joinAsKubelet({
      server: plane.server,
      caPem: plane.admin.caPem,
      bootstrapToken: token,
      nodeName,
      providerID: `cnap:///local/${nodeName}`,
      labels,
      taints: [{ key: "karpenter.sh/unregistered", effect: "NoExecute" }],
      certificateTimeoutMs: 60_000,
    });

  it("joins with a valid token: the Node has its providerID, labels and taints, is Ready, and acts as system:node:<name>", async function () {
    await kube(
      plane.admin,
      "POST",
      "/api/v1/namespaces/kube-system/secrets",
      bootstrapTokenSecret("abcdef", "0123456789abcdef", new Date(Date.now() + 3600_000)),
    );
    const identity: KubeIdentity = await join_("abcdef.0123456789abcdef", "local-n1", { "node.kubernetes.io/pool": "burst" });
    const node = (await kube(plane.admin, "GET", "/api/v1/nodes/local-n1")) as {
      metadata: { labels: Record<string, string> };
      spec: { providerID: string; taints: Array<{ key: string; effect: string }> };
      status: { conditions: Array<{ type: string; status: string }> };
    };
    assert.equal(node.spec.providerID, "cnap:///local/local-n1");
    assert.equal(node.metadata.labels["node.kubernetes.io/pool"], "burst");
    // The node lifecycle controller may add its own not-ready taint until it has seen the node Ready.
    assert.ok(
      node.spec.taints.some((t) => `${t.key}:${t.effect}` === "karpenter.sh/unregistered:NoExecute"),
      JSON.stringify(node.spec.taints),
    );
    assert.equal(node.status.conditions.find((c) => c.type === "Ready")?.status, "True");
    const review = (await kube(identity, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
    })) as {
      status: { userInfo: { username: string; groups: string[] } };
    };
    assert.equal(review.status.userInfo.username, "system:node:local-n1");
    assert.ok(review.status.userInfo.groups.includes("system:nodes"));
    // NodeRestriction: a node cannot touch another node.
    await assert.rejects(kube(identity, "PATCH", "/api/v1/nodes/local-other", { metadata: { labels: { a: "b" } } }), /HTTP 403|HTTP 404/);
  });

  it("never yields a Node for an expired or unknown token", async function () {
    await kube(
      plane.admin,
      "POST",
      "/api/v1/namespaces/kube-system/secrets",
      bootstrapTokenSecret("expird", "0123456789abcdef", new Date(Date.now() - 60_000)),
    );
    for (const token of ["expird.0123456789abcdef", "nosuch.0123456789abcdef"]) {
      await assert.rejects(
        join_(token, "local-bad"),
        (error: unknown) =>
          error instanceof KubeletJoinError && error.stage === "csr" && /HTTP 401/.test(error.message) && !error.transient,
      );
    }
    await assert.rejects(kube(plane.admin, "GET", "/api/v1/nodes/local-bad"), /HTTP 404/);
  });

  it("refuses a label NodeRestriction forbids, as a kubelet would be refused", async function () {
    await kube(
      plane.admin,
      "POST",
      "/api/v1/namespaces/kube-system/secrets",
      bootstrapTokenSecret("lbltst", "0123456789abcdef", new Date(Date.now() + 3600_000)),
    );
    await assert.rejects(
      join_("lbltst.0123456789abcdef", "local-n2", { "node-role.kubernetes.io/worker": "" }),
      (error: unknown) =>
        error instanceof KubeletJoinError && error.stage === "register" && /HTTP 403/.test(error.message) && !error.transient,
    );
  });

  it("tells an unreachable API server (which a kubelet retries) from a refusal", async function () {
    await assert.rejects(
      joinAsKubelet({
        server: "https://127.0.0.1:1",
        caPem: plane.admin.caPem,
        bootstrapToken: "unreach.0123456789abcdef",
        nodeName: "local-unreachable",
        providerID: "cnap:///local/local-unreachable",
        labels: {},
        taints: [],
      }),
      (error: unknown) => error instanceof KubeletJoinError && error.stage === "csr" && error.status === undefined && error.transient,
    );
    assert.equal(new KubeletJoinError("csr", "busy", 503).transient, true);
    assert.equal(new KubeletJoinError("csr", "throttled", 429).transient, true);
    assert.equal(new KubeletJoinError("certificate", "denied", 403).transient, false);
  });

  it("runs the pods bound to its Node and confirms their deletion, as a kubelet does, and only its own", async function () {
    await kube(
      plane.admin,
      "POST",
      "/api/v1/namespaces/kube-system/secrets",
      bootstrapTokenSecret("podtst", "0123456789abcdef", new Date(Date.now() + 3600_000)),
    );
    const node = await join_("podtst.0123456789abcdef", "local-p1");
    const pod = (name: string, nodeName: string) => ({
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: "default" },
      spec: { nodeName, containers: [{ name: "app", image: "registry.invalid/app:1" }], tolerations: [{ operator: "Exists" }] },
    });
    await kube(plane.admin, "POST", "/api/v1/namespaces/default/pods", pod("mine", "local-p1"));
    await kube(plane.admin, "POST", "/api/v1/namespaces/default/pods", pod("elsewhere", "local-other"));
    assert.deepEqual(await syncNodePods(node, "local-p1"), { started: 1, deleted: 0 });
    const running = (await kube(plane.admin, "GET", "/api/v1/namespaces/default/pods/mine")) as {
      status: { phase: string; conditions: Array<{ type: string; status: string }> };
    };
    assert.equal(running.status.phase, "Running");
    assert.ok(running.status.conditions.some((c) => c.type === "Ready" && c.status === "True"));
    const other = (await kube(plane.admin, "GET", "/api/v1/namespaces/default/pods/elsewhere")) as { status: { phase: string } };
    assert.equal(other.status.phase, "Pending", "another node's pod is not this kubelet's");

    // A graceful delete leaves the pod terminating until its kubelet confirms it.
    await kube(plane.admin, "DELETE", "/api/v1/namespaces/default/pods/mine", {
      kind: "DeleteOptions",
      apiVersion: "v1",
      gracePeriodSeconds: 30,
    });
    const terminating = (await kube(plane.admin, "GET", "/api/v1/namespaces/default/pods/mine")) as {
      metadata: { deletionTimestamp?: string };
    };
    assert.ok(terminating.metadata.deletionTimestamp);
    assert.deepEqual(await syncNodePods(node, "local-p1"), { started: 0, deleted: 1 });
    await assert.rejects(kube(plane.admin, "GET", "/api/v1/namespaces/default/pods/mine"), /HTTP 404/);
  });
});
