/**
 * Issue 37 part 5, as `serve` wires it (reconciler/elasticMetalOrphans.ts): the reclaimer built
 * from the service's environment sweeps on its interval, lists the Nodes in the local control
 * plane's real kube-apiserver, and deletes from the fake Scaleway API only the server that neither
 * git's stack declares nor a Node holds.
 */
import { strict as assert } from "node:assert";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ControlPlane, startControlPlane } from "../../../automation/local/controlPlane";
import { type FakeScaleway, buildFakeScaleway } from "../../../automation/local/fakeScaleway/fakeScalewayApi";
import { kube } from "../../../automation/local/kubeClient";
import { serviceElasticMetalReclaimer } from "../../../automation/reconciler/elasticMetalOrphans";
import type { OrphanReclaimer } from "../../../automation/reconciler/orphanReclaimer";
import { kubeconfigCredentials, kubernetesApiRequest } from "../../../components/kubernetes/kubernetesApiClient";
import { parseFleetSpec } from "../../../components/fleet/fleetSpec";
import { memberTags, orderElasticMetalServer } from "../../support/fakeScalewayServers";
import { elasticMetalPoolConfig, rawFleetConfig } from "../../support/fleetConfigFixture";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";
import { until } from "../../support/until";

const SCW_KEY = "0d9c8b7a-6f5e-4d3c-8b2a-1f0e9d8c7b6a";
const PROJECT = "22222222-3333-4444-a555-666666666666";

describe("Elastic Metal orphans on the local control plane", function () {
  this.timeout(300_000);
  let dir: string;
  let plane: ControlPlane;
  let scaleway: FakeScaleway;
  let reclaimer: OrphanReclaimer | undefined;

  before(async function () {
    skipUnlessAvailable(this, missingTools("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-em-orphans-"));
    plane = await startControlPlane({ dir: join(dir, "control-plane") });
    scaleway = buildFakeScaleway({ secretKey: SCW_KEY, projectId: PROJECT, stateFile: join(dir, "scw.json"), actionMs: 20, installMs: 0 });
  });
  after(async function () {
    await reclaimer?.stop();
    await scaleway?.app.close();
    await plane?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("keeps the declared member and the one whose Node is still in the cluster, and deletes the leaked box", async function () {
    const apiUrl = await scaleway.app.listen({ port: 0, host: "127.0.0.1" });
    const fleet = parseFleetSpec(rawFleetConfig({ pools: [elasticMetalPoolConfig({ name: "gpu", replicas: 1 })] }));
    const clusterId = fleet.cluster.id;
    for (const nodeId of ["gpu-0", "gpu-1", "gpu-2"]) {
      const account = { apiUrl, secretKey: SCW_KEY, projectId: PROJECT };
      await orderElasticMetalServer(account, "fr-par-2", `${clusterId}-${nodeId}`, memberTags(clusterId, "gpu", nodeId));
    }
    // gpu-1 was scaled down in git and not yet applied: its Node is still there.
    await kube(plane.admin, "POST", "/api/v1/nodes", {
      metadata: { name: `${clusterId}-gpu-1`, labels: { "nodefleet.io/cluster": clusterId } },
    });
    const kubeconfig = readFileSync(plane.adminKubeconfig, "utf8");
    const requests: string[] = [];
    reclaimer = serviceElasticMetalReclaimer({
      env: { SCW_SECRET_KEY: SCW_KEY, SCW_API_URL: apiUrl, SCW_DEFAULT_PROJECT_ID: PROJECT },
      fleet: () => fleet,
      listNodes: () =>
        kubernetesApiRequest(kubeconfigCredentials(kubeconfig), "GET", `/api/v1/nodes?labelSelector=nodefleet.io%2Fcluster%3D${clusterId}`),
      options: { clusterId, graceMs: 0, intervalMs: 200 },
      metrics: { cloudRequest: (provider, operation) => requests.push(`${provider} ${operation}`) },
    });
    assert.ok(reclaimer, "a secret key gets a reclaimer");
    assert.equal(
      serviceElasticMetalReclaimer({
        env: {},
        fleet: () => fleet,
        listNodes: async () => undefined,
        options: { clusterId },
        metrics: { cloudRequest: () => undefined },
      }),
      undefined,
      "no key, no reclaimer",
    );
    reclaimer.start();
    const names = () =>
      scaleway.state
        .all("servers")
        .map((s) => s.name)
        .sort();
    await until(
      "the leaked server's delete",
      async () => (names().length === 2 ? true : undefined),
      60_000,
      () => names().join(", "),
      200,
    );
    assert.deepEqual(names(), [`${clusterId}-gpu-0`, `${clusterId}-gpu-1`]);
    assert.ok(requests.includes("scaleway delete_server"), requests.join(", "));
  });
});
