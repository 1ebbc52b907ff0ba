/**
 * Projected ServiceAccount tokens against a real kube-apiserver (the local control plane): tokens
 * minted by TokenRequest, as kubelet mints the driver's projected token, are reviewed by the
 * scaling API through the stack's kubeconfig. The driver's ServiceAccount with audience nodefleet
 * is accepted; another ServiceAccount is 403; another audience is 401. And the chart's narrowed
 * Secret access (a Role with resourceNames) lets the driver's ServiceAccount list and watch its token
 * Secret by a metadata.name field selector, as the driver's cache does, and nothing else.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlane, startControlPlane } from "../../../automation/local/controlPlane";
import { KubeApiError, kube } from "../../../automation/local/kubeClient";
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

  it("lets a Role with resourceNames list and watch the one Secret by metadata.name, and no other", async () => {
    const admin = plane!.admin;
    await kube(admin, "POST", `/api/v1/namespaces/${NAMESPACE}/secrets`, {
      metadata: { name: "nodefleet-api-token" },
      stringData: { token: "x" },
    });
    await kube(admin, "POST", `/api/v1/namespaces/${NAMESPACE}/secrets`, { metadata: { name: "unrelated" }, stringData: { token: "y" } });
    await kube(admin, "POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${NAMESPACE}/roles`, {
      metadata: { name: "token-secret" },
      rules: [{ apiGroups: [""], resources: ["secrets"], resourceNames: ["nodefleet-api-token"], verbs: ["get", "list", "watch"] }],
    });
    await kube(admin, "POST", `/apis/rbac.authorization.k8s.io/v1/namespaces/${NAMESPACE}/rolebindings`, {
      metadata: { name: "token-secret" },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "token-secret" },
      subjects: [{ kind: "ServiceAccount", name: DRIVER, namespace: NAMESPACE }],
    });
    const driver = { server: admin.server, caPem: admin.caPem, token: await tokenFor(DRIVER, ["https://kubernetes.default.svc"]) };
    const secrets = `/api/v1/namespaces/${NAMESPACE}/secrets`;
    const statusOf = (path: string) =>
      kube(driver, "GET", path).then(
        () => 200,
        (error: unknown) => (error instanceof KubeApiError ? error.status : Promise.reject(error)),
      );
    // RBAC is cached briefly by the authorizer: wait for the binding to apply.
    let listed = 0;
    for (let attempt = 0; attempt < 40 && listed !== 200; attempt += 1) {
      listed = await statusOf(`${secrets}?fieldSelector=metadata.name%3Dnodefleet-api-token`);
      if (listed !== 200) await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(listed, 200, "list of the token Secret by name");
    assert.equal(
      await statusOf(`${secrets}?fieldSelector=metadata.name%3Dnodefleet-api-token&watch=true&timeoutSeconds=1`),
      200,
      "watch by name",
    );
    assert.equal(await statusOf(`${secrets}/nodefleet-api-token`), 200, "get by name");
    assert.equal(await statusOf(secrets), 403, "a list of every Secret");
    assert.equal(await statusOf(`${secrets}/unrelated`), 403, "another Secret");
  });
});
