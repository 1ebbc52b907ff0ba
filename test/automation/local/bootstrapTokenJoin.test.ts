/**
 * nodefleet's bootstrap token, made by the real engine (pulumi CLI, the Kubernetes provider plugin,
 * the random and time plugins) in a real control plane, lets a node join through TLS bootstrap with
 * the k0s join token nodefleet renders; a second up changes nothing (token values live in state);
 * destroying the node's token (scale-down) makes the same join token useless.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { decodeK0sJoinToken } from "../../../components/bootstrap/k0sJoinToken";
import { renderK0sWorkerCloudConfig } from "../../../components/bootstrap/k0sWorkerCloudConfig";
import { kubeletSchema } from "../../../components/fleet/fleetSpec";
import { readK0sWorkerUserData } from "../../../automation/local/workerUserDataReader";
import { AutomationEngine } from "../../../automation/engine/automationEngine";
import type { StackDefinition } from "../../../automation/engine/stackEngine";
import { type ControlPlane, startControlPlane } from "../../../automation/local/controlPlane";
import { kube } from "../../../automation/local/kubeClient";
import { KubeletJoinError, joinAsKubelet } from "../../../automation/local/kubeletBootstrap";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const PROGRAM = join(__dirname, "..", "..", "support", "bootstrapTokenProgram.js");
const silent = { info() {}, warn() {}, error() {} };

describe("bootstrap tokens on the real engine and a real control plane", function () {
  this.timeout(300_000);
  let dir: string;
  let plane: ControlPlane;

  before(async function () {
    skipUnlessAvailable(
      this,
      missingTools(
        "pulumi",
        "pulumi-resource-kubernetes",
        "pulumi-resource-random",
        "pulumi-resource-time",
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
      ),
    );
    dir = mkdtempSync(join(tmpdir(), "nodefleet-bootstrap-e2e-"));
    plane = await startControlPlane({ dir: join(dir, "control-plane") });
  });

  after(async function () {
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("joins a node with the rendered k0s join token, keeps the token stable, and revokes it with the node", async function () {
    const engine = new AutomationEngine({
      dataDir: join(dir, "data"),
      env: { ...process.env, PULUMI_CONFIG_PASSPHRASE: "bootstrap-e2e" },
      logger: silent,
    });
    const stack = (nodes: string[]): StackDefinition => ({
      stackName: "bootstrap",
      program: { module: PROGRAM },
      config: {
        "bootstraptest:kubeconfig": { value: readFileSync(plane.adminKubeconfig, "utf8"), secret: true },
        "bootstraptest:apiServer": { value: plane.server },
        "bootstraptest:caCertificate": { value: plane.admin.caPem },
        "bootstraptest:nodes": { value: nodes },
      },
    });
    const first = await engine.up(stack(["local-a1", "local-a2"]));
    assert.equal(first.succeeded, true, JSON.stringify(first.steps.filter((s) => s.error)));
    assert.ok(
      first.steps.some((s) => s.op === "create" && s.type === "kubernetes:core/v1:Secret"),
      "the token Secrets were created by the Kubernetes provider",
    );

    const kubeconfig = parse(decodeK0sJoinToken(String(first.outputs["joinToken-local-a1"]))) as {
      users: Array<{ name: string; user: { token: string } }>;
    };
    assert.equal(kubeconfig.users[0]!.name, "kubelet-bootstrap");
    const token = kubeconfig.users[0]!.user.token;
    const request = (nodeName: string, bootstrapToken: string) => ({
      server: plane.server,
      caPem: plane.admin.caPem,
      bootstrapToken,
      nodeName,
      providerID: `cnap:///local/${nodeName}`,
      labels: {},
      taints: [],
    });
    await joinAsKubelet(request("local-a1", token));
    const node = (await kube(plane.admin, "GET", "/api/v1/nodes/local-a1")) as { spec: { providerID: string } };
    assert.equal(node.spec.providerID, "cnap:///local/local-a1");

    // The second node joins from the user data nodefleet renders, read as cloud-init and the join script would.
    const userData = renderK0sWorkerCloudConfig({
      k0sVersion: "v1.33.4+k0s.0",
      joinToken: String(first.outputs["joinToken-local-a2"]),
      hostname: "local-a2",
      providerID: "cnap:///local/k0123456789ab",
      labels: { "node.kubernetes.io/pool": "burst", "karpenter.sh/nodepool": "default" },
      taints: [
        { key: "workload", value: "batch", effect: "NoSchedule" },
        { key: "karpenter.sh/unregistered", effect: "NoExecute" },
      ],
      kubelet: kubeletSchema.parse({}),
    });
    const intent = readK0sWorkerUserData(userData);
    await joinAsKubelet({ ...intent, nodeName: intent.hostname });
    const fromUserData = (await kube(plane.admin, "GET", "/api/v1/nodes/local-a2")) as {
      metadata: { labels: Record<string, string> };
      spec: { providerID: string; taints: Array<{ key: string; value?: string; effect: string }> };
    };
    assert.equal(fromUserData.spec.providerID, "cnap:///local/k0123456789ab");
    assert.equal(fromUserData.metadata.labels["karpenter.sh/nodepool"], "default");
    assert.ok(fromUserData.spec.taints.some((t) => t.key === "workload" && t.value === "batch" && t.effect === "NoSchedule"));
    assert.ok(fromUserData.spec.taints.some((t) => t.key === "karpenter.sh/unregistered" && t.effect === "NoExecute"));

    const second = await engine.up(stack(["local-a1", "local-a2"]));
    assert.ok(
      second.steps.every((s) => s.op === "same"),
      JSON.stringify(second.summary),
    );
    assert.equal(second.outputs["joinToken-local-a1"], first.outputs["joinToken-local-a1"], "the token is stable across runs");
    assert.equal(second.outputs["expiration-local-a1"], first.outputs["expiration-local-a1"]);

    const down = await engine.up(stack(["local-a2"]));
    assert.ok(down.steps.some((s) => s.op === "delete" && s.type === "kubernetes:core/v1:Secret"));
    // The authenticator reads token Secrets through an informer: the revocation lands within moments.
    const deadline = Date.now() + 15_000;
    let revoked = false;
    while (!revoked && Date.now() < deadline) {
      revoked = await kube(
        { server: plane.server, caPem: plane.admin.caPem, token },
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        { apiVersion: "authentication.k8s.io/v1", kind: "SelfSubjectReview" },
      ).then(
        () => false,
        (error: unknown) => /HTTP 401/.test((error as Error).message),
      );
      if (!revoked) await new Promise((r) => setTimeout(r, 250));
    }
    assert.ok(revoked, "the deleted node's token stops authenticating");
    await assert.rejects(
      joinAsKubelet(request("local-a1b", token)),
      (error: unknown) => error instanceof KubeletJoinError && error.stage === "csr",
    );
  });
});
