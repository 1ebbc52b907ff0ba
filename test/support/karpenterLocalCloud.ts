/**
 * The whole autoscaling loop on one machine, for the Karpenter end-to-end test and benchmark: the
 * local cloud with the `local` stack applied by the real CLI, `nodefleet serve --engine automation`
 * on it, Karpenter's CRDs, a token Secret, a NodefleetNodeClass and a NodePool mirroring the
 * burst pool (automation/local/karpenterObjects.ts, as `nodefleet local karpenter` applies them),
 * and the toolchain's `nodefleet-karpenter` controller against the real control plane
 * (automation/local/karpenterController.ts). Everything listens on 127.0.0.1 and stops with `stop()`.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { parseFleetSpec } from "../../components/fleet/fleetSpec";
import { type KarpenterController, startKarpenterController } from "../../automation/local/karpenterController";
import {
  applyKarpenterObjects,
  autoscaledPoolOf,
  inflateDeployment,
  karpenterObjects,
  nodeClassReadiness,
} from "../../automation/local/karpenterObjects";
import { kube } from "../../automation/local/kubeClient";
import { type LocalCloud, startLocalCloud } from "../../automation/local/localCloud";
import { TOKEN } from "./apiHarness";
import { type HcloudExchange, recordHcloudExchanges } from "./hcloudOpenApi";
import { type PoolServer, editLocalPool, poolServers } from "./localFleet";
import { LOCAL_STACK, runPulumi } from "../../automation/local/localStack";
import { configValues, readStackConfigFile } from "../../automation/stackConfigFile";
import { localStackProject } from "./localStackProject";
import { until } from "./until";
import { type ServeProcess, startServe } from "./serveProcess";
import { LOCAL_CLOUD_TOOLS } from "./toolchainRequirement";

/** The toolchain pieces the loop needs. */
export const KARPENTER_LOOP_TOOLS = [...LOCAL_CLOUD_TOOLS, "nodefleet-karpenter"];

export interface KubeItem {
  metadata: { name: string; labels?: Record<string, string>; finalizers?: string[]; deletionTimestamp?: string };
  spec?: { providerID?: string; nodeName?: string; taints?: Array<{ key: string }> };
  status?: {
    phase?: string;
    providerID?: string;
    nodeName?: string;
    conditions?: Array<{ type: string; status: string; reason?: string }>;
  };
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
  /** The first this many committed creates lose their answer (NODEFLEET_SIM_DROP_CREATE_ANSWERS). Default none. */
  readonly dropCreateAnswers?: number;
  /** The driver's garbage collection grace (INSTANCE_GC_GRACE, a Go duration). Default: the driver's. */
  readonly instanceGcGrace?: string;
  /** Edits the local stack file before its first `pulumi up` (e.g. a cluster setting). Default: none. */
  readonly prepare?: (cloud: LocalCloud) => void;
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
    env: {
      ...process.env,
      NODEFLEET_SIM_OUT_OF_STOCK: options.outOfStock ?? "",
      ...(options.bootDelayMs !== undefined ? { NODEFLEET_SIM_BOOT_DELAY_MS: String(options.bootDelayMs) } : {}),
    },
    onFakeHcloud: (fake) => recordHcloudExchanges(fake, hcloudExchanges),
  });
  let serve: ServeProcess | undefined;
  let controller: KarpenterController | undefined;
  let controllerLog = () => "";
  const stop = async () => {
    await controller?.stop();
    serve?.child.kill("SIGTERM");
    await serve?.exited();
    await cloud.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    options.prepare?.(cloud);
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    serve = await startServe(
      join(dir, "serve"),
      {
        ...cloud.env,
        NODEFLEET_BATCH_IDLE_MS: "300",
        NODEFLEET_API_TOKENS: `local:${TOKEN}`,
        ...(options.dropCreateAnswers !== undefined ? { NODEFLEET_SIM_DROP_CREATE_ANSWERS: String(options.dropCreateAnswers) } : {}),
      },
      { stack: "local", engine: "automation", cwd: project, clusterId: "local", startTimeoutMs: 120_000 },
    );
    const served = serve;
    const admin = cloud.plane.admin;
    const list = async (path: string) => ((await kube(admin, "GET", path)) as { items: KubeItem[] }).items;
    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 300_000) =>
      until(what, probe, timeoutMs, () => `controller:\n${controllerLog().slice(-4000)}\nserve:\n${served.stderr().slice(-2000)}`);

    // The burst pool as the stack file declares it: the NodePool mirrors its server types, limits, labels and taints.
    const burst = autoscaledPoolOf(parseFleetSpec(configValues(readStackConfigFile(LOCAL_STACK, project).config)), "local-burst");
    await applyKarpenterObjects(
      admin,
      karpenterObjects({
        pool: burst,
        clusterId: "local",
        endpoint: served.baseUrl,
        token: TOKEN,
        nodeClassName: "default",
        nodePoolName: "burst",
        consolidateAfter: options.consolidateAfter ?? "5s",
      }),
    );

    controller = await startKarpenterController({
      kubeconfig: cloud.plane.adminKubeconfig,
      ...(options.instanceGcGrace !== undefined ? { env: { ...process.env, INSTANCE_GC_GRACE: options.instanceGcGrace } } : {}),
    });
    const started = controller;
    controllerLog = () => started.log();

    await waitFor("the NodeClass Ready", async () => ((await nodeClassReadiness(admin, "default"))?.ready ? true : undefined));
    return {
      cloud,
      serve: served,
      hcloudExchanges,
      list,
      waitFor,
      async inflate(replicas, cpu) {
        await kube(admin, "POST", "/apis/apps/v1/namespaces/default/deployments", inflateDeployment({ replicas, cpu })).catch(() =>
          kube(
            admin,
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/inflate",
            { spec: { replicas } },
            "application/merge-patch+json",
          ),
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
