/**
 * The Karpenter objects `nodefleet local karpenter` and the Karpenter end-to-end test apply, built
 * from a stack's autoscaled pool: the NodePool asks for exactly the pool's server types, stops at
 * its limits and carries its labels and taints; the NodeClass names the API, cluster, pool and token
 * Secret; the pool is chosen by name or as the only autoscaled one, with errors naming the choices.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { type HcloudAutoscaledPool, parseFleetSpec } from "../../../components/fleet/fleetSpec";
import {
  KARPENTER_NAMESPACE,
  TOKEN_SECRET,
  autoscaledPoolOf,
  inflateDeployment,
  karpenterCrds,
  karpenterObjects,
  nodeClass,
  nodePool,
  objectPath,
  tokenSecret,
} from "../../../automation/local/karpenterObjects";
import { kubeIdentityFromKubeconfig } from "../../../automation/local/kubeconfigIdentity";
import { localFleetConfig } from "../../../automation/local/localStack";
import { FIXTURE_CA_CERTIFICATE } from "../../support/fleetConfigFixture";

const localFleet = () => parseFleetSpec(localFleetConfig({ server: "https://127.0.0.1:6443", admin: { caPem: FIXTURE_CA_CERTIFICATE } }));

type NodePoolSpec = {
  template: {
    metadata?: { labels?: Record<string, string> };
    spec: {
      nodeClassRef: unknown;
      requirements: Array<{ key: string; operator: string; values: string[] }>;
      taints?: unknown[];
      expireAfter: string;
    };
  };
  limits: Record<string, string>;
  disruption: { consolidationPolicy: string; consolidateAfter: string };
};

describe("Karpenter objects built from a stack's autoscaled pool", function () {
  it("mirrors the local stack's burst pool in the NodePool: server types, limits, labels, no taints", function () {
    const pool = autoscaledPoolOf(localFleet());
    assert.equal(pool.name, "local-burst", "the local stack's only autoscaled pool is the default");
    const object = nodePool(pool, { name: "local-burst", nodeClassName: "local-burst" });
    assert.equal(object.apiVersion, "karpenter.sh/v1");
    assert.equal(object.kind, "NodePool");
    assert.equal(object.metadata.name, "local-burst");
    const spec = object.spec as NodePoolSpec;
    assert.deepEqual(spec.template.spec.nodeClassRef, { group: "karpenter.nodefleet.io", kind: "NodefleetNodeClass", name: "local-burst" });
    assert.deepEqual(spec.template.spec.requirements, [
      { key: "karpenter.sh/capacity-type", operator: "In", values: ["on-demand"] },
      { key: "node.kubernetes.io/instance-type", operator: "In", values: ["cpx21", "cpx31"] },
    ]);
    assert.deepEqual(spec.limits, { nodes: "50", cpu: "200", memory: "400Gi" }, "maxNodes 50, cpu 200, memoryGiB 400");
    assert.deepEqual(spec.template.metadata?.labels, { "node.kubernetes.io/pool": "local-burst" });
    assert.equal(spec.template.spec.taints, undefined, "the burst pool has no taints");
    assert.equal(spec.template.spec.expireAfter, "Never");
    assert.deepEqual(spec.disruption, { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "30s" });
  });

  it("carries a pool's taints, and only the limits the pool sets", function () {
    const pool: HcloudAutoscaledPool = {
      ...autoscaledPoolOf(localFleet()),
      serverTypes: ["cax11"],
      limits: { maxNodes: 3, memoryGiB: 12.5 },
      labels: {},
      taints: [
        { key: "workload", value: "batch", effect: "NoSchedule" },
        { key: "spot", effect: "PreferNoSchedule" },
      ],
    };
    const spec = nodePool(pool, { name: "batch", nodeClassName: "default", consolidateAfter: "5s" }).spec as NodePoolSpec;
    assert.deepEqual(spec.limits, { nodes: "3", memory: "12.5Gi" });
    assert.deepEqual(spec.template.spec.taints, [
      { key: "workload", value: "batch", effect: "NoSchedule" },
      { key: "spot", effect: "PreferNoSchedule" },
    ]);
    assert.equal(spec.template.metadata, undefined, "no labels, no template metadata");
    assert.deepEqual(spec.template.spec.requirements[1], { key: "node.kubernetes.io/instance-type", operator: "In", values: ["cax11"] });
    assert.equal(spec.disruption.consolidateAfter, "5s");
  });

  it("points the NodeClass at the given endpoint, cluster and pool, with the token Secret in the driver's namespace", function () {
    const object = nodeClass({ name: "default", endpoint: "http://127.0.0.1:8080", clusterId: "local", pool: "local-burst" });
    assert.deepEqual(object, {
      apiVersion: "karpenter.nodefleet.io/v1alpha1",
      kind: "NodefleetNodeClass",
      metadata: { name: "default" },
      spec: {
        endpoint: "http://127.0.0.1:8080",
        clusterID: "local",
        pool: "local-burst",
        tokenSecretRef: { name: TOKEN_SECRET, namespace: KARPENTER_NAMESPACE, key: "token" },
      },
    });
    const secret = tokenSecret("s3cret");
    assert.deepEqual(secret.metadata, { name: TOKEN_SECRET, namespace: KARPENTER_NAMESPACE });
    assert.equal(Buffer.from((secret.data as { token: string }).token, "base64").toString(), "s3cret");
  });

  it("builds the whole set for a pool: the chart's CRDs, namespace, Secret, NodeClass and NodePool", function () {
    const pool = autoscaledPoolOf(localFleet(), "local-burst");
    const objects = karpenterObjects({
      pool,
      clusterId: "local",
      endpoint: "http://127.0.0.1:9999",
      token: "t",
      nodeClassName: "default",
      nodePoolName: "burst",
      consolidateAfter: "5s",
    });
    assert.deepEqual(
      objects.crds.map((c) => c.metadata.name),
      [
        "capacitybuffers.autoscaling.x-k8s.io",
        "nodefleetnodeclasses.karpenter.nodefleet.io",
        "nodeclaims.karpenter.sh",
        "nodeoverlays.karpenter.sh",
        "nodepools.karpenter.sh",
      ],
    );
    assert.equal(karpenterCrds().length, 5);
    assert.equal((objects.nodeClass.spec as { pool: string }).pool, "local-burst");
    assert.equal(objects.nodePool.metadata.name, "burst");
    assert.deepEqual((objects.nodePool.spec as NodePoolSpec).template.spec.nodeClassRef, {
      group: "karpenter.nodefleet.io",
      kind: "NodefleetNodeClass",
      name: "default",
    });
    assert.equal((objects.nodePool.spec as NodePoolSpec).disruption.consolidateAfter, "5s");
    assert.equal(objectPath(objects.nodePool), "/apis/karpenter.sh/v1/nodepools/burst");
    assert.equal(objectPath(objects.nodeClass), "/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses/default");
    assert.equal(objectPath(objects.secret), `/api/v1/namespaces/${KARPENTER_NAMESPACE}/secrets/${TOKEN_SECRET}`);
    assert.equal(objectPath(objects.namespace), `/api/v1/namespaces/${KARPENTER_NAMESPACE}`);
    assert.equal(
      objectPath(objects.crds[0]!),
      "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/capacitybuffers.autoscaling.x-k8s.io",
    );
    assert.equal(objectPath(inflateDeployment({ replicas: 0, cpu: "1" })), "/apis/apps/v1/namespaces/default/deployments/inflate");
  });

  it("keeps the inflate pods on the NodePool, tolerating the pool's taints", function () {
    const deployment = inflateDeployment({
      replicas: 5,
      cpu: "1",
      nodePool: "batch",
      taints: [
        { key: "workload", value: "batch", effect: "NoSchedule" },
        { key: "spot", effect: "NoExecute" },
      ],
    });
    const pod = deployment.spec as {
      replicas: number;
      template: { spec: { nodeSelector?: unknown; tolerations?: unknown; containers: Array<{ resources: unknown }> } };
    };
    assert.equal(pod.replicas, 5);
    assert.deepEqual(pod.template.spec.nodeSelector, { "karpenter.sh/nodepool": "batch" });
    assert.deepEqual(pod.template.spec.tolerations, [
      { key: "workload", operator: "Equal", value: "batch", effect: "NoSchedule" },
      { key: "spot", operator: "Exists", effect: "NoExecute" },
    ]);
    assert.deepEqual(pod.template.spec.containers[0]!.resources, { requests: { cpu: "1", memory: "256Mi" } });
    const plain = (inflateDeployment({ replicas: 1, cpu: "700m" }).spec as typeof pod).template.spec;
    assert.equal(plain.nodeSelector, undefined);
    assert.equal(plain.tolerations, undefined);
  });

  describe("choosing the pool", function () {
    it("names the autoscaled pools when the one asked for is static or unknown", function () {
      const fleet = localFleet();
      assert.throws(
        () => autoscaledPoolOf(fleet, "local-general"),
        /pool local-general is static, not autoscaled: Karpenter needs an autoscaled pool \(this stack's: local-burst\)/,
      );
      assert.throws(() => autoscaledPoolOf(fleet, "burst"), /no pool burst; its autoscaled pools: local-burst/);
    });

    it("asks which when there are several, and says when there is none", function () {
      const fleet = localFleet();
      const burst = autoscaledPoolOf(fleet);
      const two = { ...fleet, pools: [...fleet.pools, { ...burst, name: "local-burst-2" }] };
      assert.throws(() => autoscaledPoolOf(two), /several autoscaled pools \(local-burst, local-burst-2\): say which with --pool/);
      assert.equal(autoscaledPoolOf(two, "local-burst-2").name, "local-burst-2");
      const none = { ...fleet, pools: fleet.pools.filter((p) => p.name !== "local-burst") };
      assert.throws(() => autoscaledPoolOf(none), /no autoscaled pool/);
    });
  });
});

describe("kubeIdentityFromKubeconfig", function () {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), "nodefleet-kubeconfig-"))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const kubeconfig = (cluster: Record<string, string>, user: Record<string, string>) => {
    const file = join(dir, "kubeconfig");
    writeFileSync(
      file,
      stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [
          { name: "other", cluster: { server: "https://203.0.113.1" } },
          { name: "local", cluster },
        ],
        users: [{ name: "admin", user }],
        contexts: [{ name: "local", context: { cluster: "local", user: "admin" } }],
        "current-context": "local",
      }),
    );
    return file;
  };

  it("reads the current context's server, CA and client certificate from inline data", function () {
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const file = kubeconfig(
      { server: "https://127.0.0.1:6443", "certificate-authority-data": b64("CA") },
      { "client-certificate-data": b64("CERT"), "client-key-data": b64("KEY") },
    );
    assert.deepEqual(kubeIdentityFromKubeconfig(file), { server: "https://127.0.0.1:6443", caPem: "CA", certPem: "CERT", keyPem: "KEY" });
  });

  it("reads files relative to the kubeconfig, and a bearer token", function () {
    writeFileSync(join(dir, "ca.pem"), "CA FILE");
    const file = kubeconfig({ server: "https://127.0.0.1:6443", "certificate-authority": "ca.pem" }, { token: "abc" });
    assert.deepEqual(kubeIdentityFromKubeconfig(file), { server: "https://127.0.0.1:6443", caPem: "CA FILE", token: "abc" });
  });
});
