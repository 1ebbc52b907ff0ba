/**
 * Karpenter's own controllers scaling the local cloud, end to end with real parts only but the
 * machines and the Hetzner API: the toolchain's `nodefleet-karpenter` (Karpenter v1.14.1's core
 * controllers with nodefleet's driver) against the real control plane, `nodefleet serve --engine
 * automation` on the local stack, kube-scheduler binding pods, and the node agent registering Nodes.
 * 20 pending pods become NodeClaims, servers in the fake API, Nodes without the unregistered taint
 * and 20 Running pods; the cheapest type is sold out, so Karpenter must use another one; deleting the
 * pods consolidates the nodes away and releases every finalizer.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { findTool } from "../../../automation/engine/toolchain";
import { kube } from "../../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../../automation/local/localCloud";
import { TOKEN } from "../../support/apiHarness";
import { localStackProject, runPulumi, until } from "../../support/localStackProject";
import { REPOSITORY_ROOT, type ServeProcess, startServe } from "../../support/serveProcess";
import { missingTools, skipUnlessAvailable } from "../../support/toolchainRequirement";

const CRDS = join(REPOSITORY_ROOT, "driver", "charts", "nodefleet-karpenter", "crds");
const NAMESPACE = "karpenter";
const PODS = 20;
const quiet = { info() {}, warn() {} };

interface Item {
  metadata: { name: string; labels?: Record<string, string>; finalizers?: string[] };
  spec?: { providerID?: string; nodeName?: string; taints?: Array<{ key: string }> };
  status?: { phase?: string; providerID?: string; conditions?: Array<{ type: string; status: string }> };
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

describe("Karpenter's controllers with nodefleet's driver scaling the local cloud", function () {
  this.timeout(900_000);
  let dir: string;
  let cloud: LocalCloud;
  let serve: ServeProcess;
  let controller: ChildProcess;
  let controllerLog = "";

  const admin = () => cloud.plane.admin;
  const list = async (path: string) => ((await kube(admin(), "GET", path)) as { items: Item[] }).items;
  const context = () => `controller:\n${controllerLog.slice(-4000)}\nserve:\n${serve?.stderr().slice(-2000) ?? ""}`;
  const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 300_000) => until(what, probe, timeoutMs, context);
  const burstServers = async () =>
    ((await (await fetch(`${cloud.env.HCLOUD_ENDPOINT}/servers?label_selector=nodefleet.io/pool=local-burst`, { headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}` } })).json()) as { servers: Array<{ server_type: { name: string } }> }).servers;

  before(async function () {
    skipUnlessAvailable(this, missingTools("pulumi", "pulumi-language-nodejs", "pulumi-resource-hcloud", "pulumi-resource-kubernetes", "pulumi-resource-random", "pulumi-resource-time", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "nodefleet-karpenter"));
    dir = mkdtempSync(join(tmpdir(), "nodefleet-karpenter-e2e-"));
    const project = localStackProject(join(dir, "project"));
    // The cheapest type of the burst pool is sold out: Karpenter has to take the other one.
    cloud = await startLocalCloud({ dataDir: join(dir, "data"), hcloudPort: 0, agentIntervalMs: 300, logger: quiet, projectDir: project, env: { ...process.env, NODEFLEET_SIM_OUT_OF_STOCK: "cpx21" } });
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    serve = await startServe(join(dir, "serve"), { ...cloud.env, NODEFLEET_BATCH_IDLE_MS: "300", NODEFLEET_API_TOKENS: `local:${TOKEN}` }, { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 120_000 });

    for (const file of readdirSync(CRDS).filter((f) => f.endsWith(".yaml"))) {
      for (const doc of parseAllDocuments(readFileSync(join(CRDS, file), "utf8"))) {
        const crd = doc.toJSON() as object | null;
        if (crd) await kube(admin(), "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
      }
    }
    await waitFor("the CRDs established", async () => {
      const crds = await list("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
      const established = crds.filter((c) => c.status?.conditions?.some((x) => x.type === "Established" && x.status === "True"));
      return established.length >= 4 ? true : undefined;
    }, 60_000);
    await kube(admin(), "POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } });
    await kube(admin(), "POST", `/api/v1/namespaces/${NAMESPACE}/secrets`, { apiVersion: "v1", kind: "Secret", metadata: { name: "nodefleet-api-token" }, stringData: { token: TOKEN } });
    await kube(admin(), "POST", "/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses", {
      apiVersion: "karpenter.nodefleet.io/v1alpha1",
      kind: "NodefleetNodeClass",
      metadata: { name: "default" },
      spec: { endpoint: serve.baseUrl, clusterID: "local", pool: "local-burst", tokenSecretRef: { name: "nodefleet-api-token", namespace: NAMESPACE, key: "token" } },
    });
    await kube(admin(), "POST", "/apis/karpenter.sh/v1/nodepools", {
      apiVersion: "karpenter.sh/v1",
      kind: "NodePool",
      metadata: { name: "burst" },
      spec: {
        template: {
          spec: {
            nodeClassRef: { group: "karpenter.nodefleet.io", kind: "NodefleetNodeClass", name: "default" },
            requirements: [{ key: "karpenter.sh/capacity-type", operator: "In", values: ["on-demand"] }],
            expireAfter: "Never",
          },
        },
        // The pool's limits in the local stack (maxNodes 10, cpu 40, memoryGiB 80).
        limits: { nodes: "10", cpu: "40", memory: "80Gi" },
        disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: "5s" },
      },
    });

    const [metrics, health] = [await freePort(), await freePort()];
    controller = spawn(findTool("nodefleet-karpenter")!, [], {
      env: { ...process.env, KUBECONFIG: cloud.plane.adminKubeconfig, SYSTEM_NAMESPACE: NAMESPACE, DISABLE_LEADER_ELECTION: "true", METRICS_PORT: String(metrics), HEALTH_PROBE_PORT: String(health), LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    controller.stdout!.on("data", (c: Buffer) => (controllerLog = (controllerLog + c.toString()).slice(-200_000)));
    controller.stderr!.on("data", (c: Buffer) => (controllerLog = (controllerLog + c.toString()).slice(-200_000)));
  });

  after(async function () {
    controller?.kill("SIGTERM");
    serve?.child.kill("SIGTERM");
    await serve?.exited();
    await cloud?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("turns 20 pending pods into NodeClaims, servers and Nodes of another type than the sold-out one, and runs them all", async function () {
    await waitFor("the NodeClass Ready", async () => {
      const nodeClass = (await kube(admin(), "GET", "/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses/default")) as Item;
      return nodeClass.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? true : undefined;
    });
    await kube(admin(), "POST", "/apis/apps/v1/namespaces/default/deployments", {
      apiVersion: "apps/v1",
      kind: "Deployment",
      metadata: { name: "inflate" },
      spec: {
        replicas: PODS,
        selector: { matchLabels: { app: "inflate" } },
        template: {
          metadata: { labels: { app: "inflate" } },
          spec: { terminationGracePeriodSeconds: 0, containers: [{ name: "inflate", image: "registry.invalid/pause:3.9", resources: { requests: { cpu: "700m", memory: "256Mi" } } }] },
        },
      },
    });
    const running = await waitFor(`${PODS} pods Running`, async () => {
      const pods = (await list("/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate")).filter((p) => p.status?.phase === "Running");
      return pods.length === PODS ? pods : undefined;
    }, 600_000);
    const nodeClaims = await list("/apis/karpenter.sh/v1/nodeclaims");
    assert.ok(nodeClaims.length >= 3 && nodeClaims.length <= 6, `${nodeClaims.length} NodeClaims for ${PODS} pods of 700m`);
    const nodes = new Set(running.map((p) => p.spec!.nodeName!));
    const registered = (await list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")).filter((n) => nodes.has(n.metadata.name));
    assert.equal(registered.length, nodes.size, "every pod runs on a Node Karpenter launched");
    for (const node of registered) {
      assert.match(node.spec!.providerID ?? "", /^nodefleet:\/\/\/local\//);
      assert.ok(!(node.spec!.taints ?? []).some((t) => t.key === "karpenter.sh/unregistered"), "Karpenter removed the unregistered taint");
      assert.equal(node.metadata.labels!["node.kubernetes.io/instance-type"], "cpx31", "not the sold-out cpx21");
    }
    assert.ok((await burstServers()).every((s) => s.server_type.name === "cpx31"));
  });

  it("consolidates the empty nodes away once the pods are gone: servers deleted, finalizers released", async function () {
    await kube(admin(), "DELETE", "/apis/apps/v1/namespaces/default/deployments/inflate");
    await waitFor("no NodeClaims", async () => ((await list("/apis/karpenter.sh/v1/nodeclaims")).length === 0 ? true : undefined), 600_000);
    await waitFor("no burst servers", async () => ((await burstServers()).length === 0 ? true : undefined), 120_000);
    await waitFor("no burst Nodes", async () => ((await list("/api/v1/nodes?labelSelector=karpenter.sh%2Fnodepool%3Dburst")).length === 0 ? true : undefined), 120_000);
  });
});
