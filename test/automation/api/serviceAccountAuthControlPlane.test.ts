/**
 * Projected ServiceAccount tokens against a real kube-apiserver (the local control plane): tokens
 * minted by TokenRequest, as kubelet mints the driver's projected token, are reviewed by the
 * scaling API through the stack's kubeconfig. The driver's ServiceAccount with audience nodefleet
 * is accepted; another ServiceAccount is 403; another audience is 401.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlane, startControlPlane } from "../../../automation/local/controlPlane";
import { kube } from "../../../automation/local/kubeClient";
import { startTestApi, type TestApi } from "../../support/apiHarness";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const NAMESPACE = "karpenter";
const DRIVER = "nodefleet-karpenter";

describe("projected ServiceAccount tokens reviewed by a real kube-apiserver", function () {
  this.timeout(300_000);
  let dir: string | undefined;
  let plane: ControlPlane | undefined;
  let api: TestApi | undefined;

  /** TokenRequest for the ServiceAccount and audiences, as kubelet asks for a projected token. */
  const tokenFor = async (serviceAccount: string, audiences: string[]) =>
    (
      (await kube(plane!.admin, "POST", `/api/v1/namespaces/${NAMESPACE}/serviceaccounts/${serviceAccount}/token`, {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenRequest",
        spec: { audiences, expirationSeconds: 600 },
      })) as { status: { token: string } }
    ).status.token;

  before(async function () {
    skipUnlessAvailable(this, missingTools("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-sa-auth-"));
    plane = await startControlPlane({ dir: join(dir, "control-plane") });
    await kube(plane.admin, "POST", "/api/v1/namespaces", { metadata: { name: NAMESPACE } });
    for (const name of [DRIVER, "intruder"]) {
      await kube(plane.admin, "POST", `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`, { metadata: { name } });
    }
    api = await startTestApi({ serviceAccountTokens: { serviceAccount: { namespace: NAMESPACE, name: DRIVER } } });
    // The service's kubeconfig for the cluster (here the admin's, which may create TokenReviews).
    const cluster = api.config["nodefleet:cluster"]!;
    api.config["nodefleet:cluster"] = {
      ...cluster,
      value: { ...(cluster.value as object), kubeconfig: readFileSync(plane.adminKubeconfig, "utf8") },
    };
  });
  after(async () => {
    await api?.close();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const statusWith = async (token: string) => {
    const response = await api!.clientWith(token).raw("GET", "/api/v1/clusters/example");
    return { status: response.status, message: (response.body as { error?: { message: string } }).error?.message ?? "" };
  };

  it("accepts the driver's ServiceAccount token with audience nodefleet", async () => {
    assert.deepEqual(await statusWith(await tokenFor(DRIVER, ["nodefleet"])), { status: 200, message: "" });
  });

  it("refuses another ServiceAccount's token with 403 naming the ServiceAccount rule", async () => {
    const { status, message } = await statusWith(await tokenFor("intruder", ["nodefleet"]));
    assert.equal(status, 403);
    assert.match(message, /system:serviceaccount:karpenter:intruder, not to ServiceAccount karpenter\/nodefleet-karpenter/);
  });

  it("refuses the driver's token for another audience with 401 naming the audience rule", async () => {
    const { status, message } = await statusWith(await tokenFor(DRIVER, ["https://kubernetes.default.svc"]));
    assert.equal(status, 401);
    assert.match(message, /does not accept this token for audience "nodefleet"/);
  });
});
