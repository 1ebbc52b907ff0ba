/**
 * The whole autoscaling loop on one machine, for the Karpenter end-to-end test and benchmark: the
 * local cloud with the `local` stack applied by the real CLI, `nodefleet serve --engine automation`
 * on it, Karpenter's CRDs, a token Secret, a NodefleetNodeClass and a NodePool mirroring the
 * burst pool's limits, and the toolchain's `nodefleet-karpenter` controller against the real
 * control plane. Everything listens on 127.0.0.1 and stops with `stop()`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { findTool } from "../../automation/engine/toolchain";
import { freePort } from "../../automation/local/freePort";
import { kube } from "../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../automation/local/localCloud";
import { TOKEN } from "./apiHarness";
import { type HcloudExchange, recordHcloudExchanges } from "./hcloudOpenApi";
import { type PoolServer, editLocalPool, poolServers } from "./localFleet";
import { runPulumi } from "../../automation/local/localStack";
import { localStackProject } from "./localStackProject";
import { until } from "./until";
import { REPOSITORY_ROOT, type ServeProcess, startServe } from "./serveProcess";

const CRDS = join(REPOSITORY_ROOT, "driver", "charts", "nodefleet-karpenter", "crds");
const NAMESPACE = "karpenter";

/** The toolchain pieces the loop needs. */
export const KARPENTER_LOOP_TOOLS = ["pulumi", "pulumi-language-nodejs", "pulumi-resource-hcloud", "pulumi-resource-kubernetes", "pulumi-resource-random", "pulumi-resource-time", "etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "nodefleet-karpenter"];

export interface KubeItem {
  metadata: { name: string; labels?: Record<string, string>; finalizers?: string[]; deletionTimestamp?: string };
  spec?: { providerID?: string; nodeName?: string; taints?: Array<{ key: string }> };
  status?: { phase?: string; providerID?: string; nodeName?: string; conditions?: Array<{ type: string; status: string; reason?: string }> };
}

/** A fake API server of the burst pool; its `nodefleet.io/node` label is the API's nodeID. */
export interface KarpenterLoop {
  readonly cloud: LocalCloud;
  readonly serve: ServeProcess;
  /** Every exchange with the fake Hetzner API so far (checked against Hetzner's OpenAPI document). */
  readonly hcloudExchanges: readonly HcloudExchange[];
  /** GET of a Kubernetes list as the admin. */
  list(path: string): Promise<KubeItem[]>;
  /** Polls with a deadline; a timeout shows the controller's and the service's last words. */
  waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs?: number): Promise<T>;
  /** Creates (or resizes) the `inflate` Deployment: `replicas` pods requesting `cpu` each. */
  inflate(replicas: number, cpu: string): Promise<void>;
  /** The fake API's servers of the burst pool. */
  burstServers(): Promise<PoolServer[]>;
  /** Edits the burst pool in the local stack file, as a user would; the service re-reads the file. */
  editBurstPool(edit: (pool: Record<string, unknown>) => void): void;
  stop(): Promise<void>;
}


export interface KarpenterLoopOptions {
  /** Server types the fake API has sold out (NODEFLEET_SIM_OUT_OF_STOCK). */
  readonly outOfStock?: string;
  /** The NodePool's consolidateAfter. Default 5s. */
  readonly consolidateAfter?: string;
  /** How long a fake server takes to boot (NODEFLEET_SIM_BOOT_DELAY_MS). Default: the fake's. */
  readonly bootDelayMs?: number;
}

export async function startKarpenterLoop(dir: string, options: KarpenterLoopOptions = {}): Promise<KarpenterLoop> {
  const project = localStackProject(join(dir, "project"));
  const hcloudExchanges: HcloudExchange[] = [];
  const cloud = await startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 300,
    logger: { info() {}, warn() {} },
    projectDir: project,
    env: { ...process.env, NODEFLEET_SIM_OUT_OF_STOCK: options.outOfStock ?? "", ...(options.bootDelayMs !== undefined ? { NODEFLEET_SIM_BOOT_DELAY_MS: String(options.bootDelayMs) } : {}) },
    onFakeHcloud: (fake) => recordHcloudExchanges(fake, hcloudExchanges),
  });
  let serve: ServeProcess | undefined;
  let controller: ChildProcess | undefined;
  let controllerLog = "";
  const stop = async () => {
    controller?.kill("SIGTERM");
    serve?.child.kill("SIGTERM");
    await serve?.exited();
    await cloud.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    serve = await startServe(join(dir, "serve"), { ...cloud.env, NODEFLEET_BATCH_IDLE_MS: "300", NODEFLEET_API_TOKENS: `local:${TOKEN}` }, { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 120_000 });
    const served = serve;
    const admin = cloud.plane.admin;
    const list = async (path: string) => ((await kube(admin, "GET", path)) as { items: KubeItem[] }).items;
    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 300_000) =>
      until(what, probe, timeoutMs, () => `controller:\n${controllerLog.slice(-4000)}\nserve:\n${served.stderr().slice(-2000)}`);

    for (const file of readdirSync(CRDS).filter((f) => f.endsWith(".yaml"))) {
      for (const doc of parseAllDocuments(readFileSync(join(CRDS, file), "utf8"))) {
        const crd = doc.toJSON() as object | null;
        if (crd) await kube(admin, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
      }
    }
    await waitFor("the CRDs established", async () => {
      const crds = await list("/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
      return crds.filter((c) => c.status?.conditions?.some((x) => x.type === "Established" && x.status === "True")).length >= 4 ? true : undefined;
    }, 60_000);
    await kube(admin, "POST", "/api/v1/namespaces", { apiVersion: "v1", kind: "Namespace", metadata: { name: NAMESPACE } });
    await kube(admin, "POST", `/api/v1/namespaces/${NAMESPACE}/secrets`, { apiVersion: "v1", kind: "Secret", metadata: { name: "nodefleet-api-token" }, stringData: { token: TOKEN } });
    await kube(admin, "POST", "/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses", {
      apiVersion: "karpenter.nodefleet.io/v1alpha1",
      kind: "NodefleetNodeClass",
      metadata: { name: "default" },
      spec: { endpoint: served.baseUrl, clusterID: "local", pool: "local-burst", tokenSecretRef: { name: "nodefleet-api-token", namespace: NAMESPACE, key: "token" } },
    });
    await kube(admin, "POST", "/apis/karpenter.sh/v1/nodepools", {
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
        // The burst pool's limits in the local stack (maxNodes 10, cpu 40, memoryGiB 80).
        limits: { nodes: "10", cpu: "40", memory: "80Gi" },
        disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: options.consolidateAfter ?? "5s" },
      },
    });

    const [metrics, health] = [await freePort(), await freePort()];
    const started = spawn(findTool("nodefleet-karpenter")!, [], {
      env: { ...process.env, KUBECONFIG: cloud.plane.adminKubeconfig, SYSTEM_NAMESPACE: NAMESPACE, DISABLE_LEADER_ELECTION: "true", METRICS_PORT: String(metrics), HEALTH_PROBE_PORT: String(health), LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    controller = started;
    const keep = (c: Buffer) => (controllerLog = (controllerLog + c.toString()).slice(-200_000));
    started.stdout!.on("data", keep);
    started.stderr!.on("data", keep);

    await waitFor("the NodeClass Ready", async () => {
      const nodeClass = (await kube(admin, "GET", "/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses/default")) as KubeItem;
      return nodeClass.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? true : undefined;
    });
    return {
      cloud,
      serve: served,
      hcloudExchanges,
      list,
      waitFor,
      async inflate(replicas, cpu) {
        const deployment = {
          apiVersion: "apps/v1",
          kind: "Deployment",
          metadata: { name: "inflate", namespace: "default" },
          spec: {
            replicas,
            selector: { matchLabels: { app: "inflate" } },
            template: {
              metadata: { labels: { app: "inflate" } },
              spec: { terminationGracePeriodSeconds: 0, containers: [{ name: "inflate", image: "registry.invalid/pause:3.9", resources: { requests: { cpu, memory: "256Mi" } } }] },
            },
          },
        };
        await kube(admin, "POST", "/apis/apps/v1/namespaces/default/deployments", deployment).catch(() =>
          kube(admin, "PATCH", "/apis/apps/v1/namespaces/default/deployments/inflate", { spec: { replicas } }, "application/merge-patch+json"),
        );
      },
      burstServers: () => poolServers(cloud, "local-burst"),
      editBurstPool: (edit) => editLocalPool(cloud, "local-burst", edit),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
