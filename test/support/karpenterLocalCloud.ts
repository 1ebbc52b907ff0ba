/**
 * The whole autoscaling loop on one machine, for the Karpenter end-to-end test and benchmark: the
 * local cloud with the `local` stack applied by the real CLI, `nodefleet serve --engine automation`
 * on it, Karpenter's CRDs, a token Secret, a NodefleetNodeClass and a NodePool mirroring the
 * burst pool (automation/local/karpenterObjects.ts, as `nodefleet local karpenter` applies them),
 * and the toolchain's `nodefleet-karpenter` controller against the real control plane
 * (automation/local/karpenterController.ts). With `chart`, the driver's Helm charts are installed
 * instead (test/support/karpenterChart.ts) and the Deployment's replicas run as local processes,
 * each authenticated as the chart's ServiceAccount (a TokenRequest token) with leader election as
 * the Deployment sets it. Everything listens on 127.0.0.1 and stops with `stop()`.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseFleetSpec } from "../../components/fleet/fleetSpec";
import { type KarpenterController, startKarpenterController } from "../../automation/local/karpenterController";
import {
  KARPENTER_NAMESPACE,
  TOKEN_SECRET,
  applyKarpenterObjects,
  autoscaledPoolOf,
  createObject,
  inflateDeployment,
  karpenterObjects,
  nodeClassReadiness,
  nodePool,
  tokenSecret,
} from "../../automation/local/karpenterObjects";
import { type KubeIdentity, kube } from "../../automation/local/kubeClient";
import type { HcloudAutoscaledPool } from "../../components/fleet/fleetSpec";
import { type ProjectedToken, chartDeployment, helmInstallCharts } from "./karpenterChart";
import { writeServiceAccountKubeconfig } from "./serviceAccountKubeconfig";
import { type LocalCloud, startLocalCloud } from "../../automation/local/localCloud";
import { TOKEN } from "./apiHarness";
import { type HcloudExchange, recordHcloudExchanges } from "./hcloudOpenApi";
import { type PoolServer, editLocalPool, poolServers } from "./localFleet";
import { LOCAL_STACK, runPulumi } from "../../automation/local/localStack";
import { configValues, readStackConfigFile } from "../../automation/stackConfigFile";
import { localStackProject } from "./localStackProject";
import { until } from "./until";
import { type ServeProcess, startServe, stopServe } from "./serveProcess";
import { LOCAL_CLOUD_TOOLS } from "./toolchainRequirement";

/** The toolchain pieces the loop needs. */
/** The pods of the `inflate` Deployment. */
const INFLATE_PODS = "/api/v1/namespaces/default/pods?labelSelector=app%3Dinflate";

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
  /** The scaling API now (another process after `startApi`). */
  readonly serve: ServeProcess;
  /** The controllers started: one, or the chart's replicas (in the Deployment's order). */
  readonly controllers: readonly KarpenterController[];
  /** Stops the scaling API (SIGTERM): its port refuses connections until `startApi`. */
  stopApi(): Promise<void>;
  /** Starts the scaling API again on the same data directory and port (the NodeClass's endpoint). */
  startApi(): Promise<void>;
  /** Every exchange with the fake Hetzner API so far (checked against Hetzner's OpenAPI document). */
  readonly hcloudExchanges: readonly HcloudExchange[];
  /** GET of a Kubernetes list as the admin. */
  list(path: string): Promise<KubeItem[]>;
  /** Polls with a deadline; a timeout shows the controller's and the service's last words. */
  waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs?: number): Promise<T>;
  /** Creates (or resizes) the `inflate` Deployment: `replicas` pods requesting `cpu` each. */
  inflate(replicas: number, cpu: string): Promise<void>;
  /** Waits until exactly `count` inflate pods are Running (default 10 minutes); answers them. */
  allPodsRunning(count: number, timeoutMs?: number): Promise<KubeItem[]>;
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
  /**
   * Install with the Helm charts (NodeClass and NodePool from values) and run the Deployment's
   * replicas under the chart's ServiceAccount and RBAC, leader election as the chart sets it,
   * instead of applying the objects and running one controller as the admin.
   */
  readonly chart?: boolean;
  /**
   * With `chart`: the chart's `token.projected` mode. Each replica reads a token minted as kubelet
   * mints a projected one (TokenRequest for the chart's ServiceAccount, the volume's audience and
   * lifetime), and the API accepts that ServiceAccount (NODEFLEET_SERVICE_ACCOUNT) through
   * TokenReview. No token Secret exists.
   */
  readonly projectedToken?: boolean;
  /** More of the scaling API's environment (e.g. NODEFLEET_BACKOFF_FOR_MS). Default: none. */
  readonly serveEnv?: Record<string, string>;
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
  const controllers: KarpenterController[] = [];
  const controllerLog = () =>
    controllers.map((c, i) => (controllers.length > 1 ? `controller ${i}:\n` : "") + c.log().slice(-4000 / controllers.length)).join("\n");
  const stop = async () => {
    await Promise.all(controllers.map((c) => c.stop()));
    await stopServe(serve);
    await cloud.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    options.prepare?.(cloud);
    await runPulumi(["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"], project, cloud.env);
    const serveEnv = {
      ...cloud.env,
      NODEFLEET_BATCH_IDLE_MS: "300",
      NODEFLEET_API_TOKENS: `local:${TOKEN}`,
      ...(options.dropCreateAnswers !== undefined ? { NODEFLEET_SIM_DROP_CREATE_ANSWERS: String(options.dropCreateAnswers) } : {}),
      ...(options.projectedToken ? { NODEFLEET_SERVICE_ACCOUNT: `${KARPENTER_NAMESPACE}/${CHART_SERVICE_ACCOUNT}` } : {}),
      ...options.serveEnv,
    };
    const runServe = (port?: number) =>
      startServe(join(dir, "serve"), serveEnv, {
        stack: "local",
        engine: "automation",
        cwd: project,
        clusterId: "local",
        startTimeoutMs: 120_000,
        ...(port !== undefined ? { port } : {}),
      });
    serve = await runServe();
    const endpoint = serve.baseUrl;
    const admin = cloud.plane.admin;
    const list = async (path: string) => ((await kube(admin, "GET", path)) as { items: KubeItem[] }).items;
    const waitFor = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 300_000) =>
      until(what, probe, timeoutMs, () => `controller:\n${controllerLog()}\nserve:\n${serve?.stderr().slice(-2000) ?? ""}`);

    // The burst pool as the stack file declares it: the NodePool mirrors its server types, limits, labels and taints.
    const burst = autoscaledPoolOf(parseFleetSpec(configValues(readStackConfigFile(LOCAL_STACK, project).config)), "local-burst");
    if (options.chart) {
      controllers.push(...(await startWithChart(dir, cloud, endpoint, burst, options)));
    } else {
      await applyKarpenterObjects(
        admin,
        karpenterObjects({
          pool: burst,
          clusterId: "local",
          endpoint,
          token: TOKEN,
          nodeClassName: "default",
          nodePoolName: "burst",
          consolidateAfter: options.consolidateAfter ?? "5s",
        }),
      );
      controllers.push(
        await startKarpenterController({
          kubeconfig: cloud.plane.adminKubeconfig,
          ...(options.instanceGcGrace !== undefined ? { env: { ...process.env, INSTANCE_GC_GRACE: options.instanceGcGrace } } : {}),
        }),
      );
    }

    await waitFor("the NodeClass Ready", async () => ((await nodeClassReadiness(admin, "default"))?.ready ? true : undefined));
    return {
      cloud,
      get serve() {
        return serve!;
      },
      controllers,
      async stopApi() {
        await stopServe(serve);
      },
      async startApi() {
        serve = await runServe(Number(new URL(endpoint).port));
      },
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
      allPodsRunning: (count, timeoutMs = 600_000) =>
        waitFor(
          `${count} pods Running`,
          async () => {
            const pods = (await list(INFLATE_PODS)).filter((p) => p.status?.phase === "Running");
            return pods.length === count ? pods : undefined;
          },
          timeoutMs,
        ),
      burstServers: () => poolServers(cloud, "local-burst"),
      editBurstPool: (edit) => editLocalPool(cloud, "local-burst", edit),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Installs the charts for `pool` (the token Secret made beforehand, as docs/karpenter.md says) and
 * starts the Deployment's replicas: each a controller with its own TokenRequest token of the chart's
 * ServiceAccount, so the chart's RBAC is all it may do, and the Deployment's environment.
 */
async function startWithChart(
  dir: string,
  cloud: LocalCloud,
  endpoint: string,
  pool: HcloudAutoscaledPool,
  options: KarpenterLoopOptions,
): Promise<KarpenterController[]> {
  const admin: KubeIdentity = cloud.plane.admin;
  const namespace = KARPENTER_NAMESPACE;
  await createObject(admin, { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } });
  if (!options.projectedToken) await createObject(admin, tokenSecret(TOKEN));
  // The NodePool's requirements, limits and taints as the objects mode builds them from the pool.
  const mirrored = nodePool(pool, { name: "burst", nodeClassName: "default" }).spec as {
    template: { spec: { requirements: unknown[]; taints?: unknown[] } };
    limits: Record<string, string>;
  };
  await helmInstallCharts(admin, {
    kubeconfig: cloud.plane.adminKubeconfig,
    namespace,
    workDir: join(dir, "helm"),
    values: {
      api: { endpoint, clusterID: "local", pool: pool.name },
      token: options.projectedToken ? { projected: true } : { existingSecret: TOKEN_SECRET },
      nodeClass: { create: true, name: "default" },
      nodePool: {
        create: true,
        name: "burst",
        requirements: mirrored.template.spec.requirements,
        taints: mirrored.template.spec.taints ?? [],
        limits: mirrored.limits,
        consolidateAfter: options.consolidateAfter ?? "5s",
      },
      ...(options.instanceGcGrace !== undefined ? { instanceGC: { grace: options.instanceGcGrace } } : {}),
    },
  });
  const deployment = await chartDeployment(admin, namespace);
  if (options.projectedToken && deployment.serviceAccountName !== CHART_SERVICE_ACCOUNT)
    throw new Error(
      `the chart's ServiceAccount is ${deployment.serviceAccountName}, but the API accepts ${CHART_SERVICE_ACCOUNT}'s tokens`,
    );
  const { env } = deployment;
  const leaderElection =
    env.DISABLE_LEADER_ELECTION === "false" && env.LEADER_ELECTION_NAME && env.LEADER_ELECTION_NAMESPACE
      ? { name: env.LEADER_ELECTION_NAME, namespace: env.LEADER_ELECTION_NAMESPACE }
      : undefined;
  const kubeconfigs = join(dir, "kubeconfigs");
  mkdirSync(kubeconfigs, { recursive: true, mode: 0o700 });
  const started: KarpenterController[] = [];
  try {
    for (let replica = 0; replica < deployment.replicas; replica++) {
      const kubeconfig = join(kubeconfigs, `replica-${replica}.kubeconfig`);
      await writeServiceAccountKubeconfig({ admin, namespace, serviceAccount: deployment.serviceAccountName, file: kubeconfig });
      const tokenFile = deployment.projectedToken
        ? await writeProjectedToken(
            admin,
            namespace,
            deployment.serviceAccountName,
            deployment.projectedToken,
            join(kubeconfigs, `replica-${replica}.token`),
          )
        : undefined;
      started.push(
        await startKarpenterController({
          kubeconfig,
          namespace: env.SYSTEM_NAMESPACE ?? namespace,
          // The mount path is the pod's; here the token is a file of the test's.
          env: { ...process.env, ...env, ...(tokenFile ? { NODEFLEET_TOKEN_FILE: tokenFile } : {}) },
          ...(env.LOG_LEVEL ? { logLevel: env.LOG_LEVEL } : {}),
          ...(leaderElection ? { leaderElection } : {}),
        }),
      );
    }
  } catch (error) {
    await Promise.all(started.map((c) => c.stop()));
    throw error;
  }
  return started;
}

/** The chart's ServiceAccount (its full name, as the release is named after the chart). */
const CHART_SERVICE_ACCOUNT = "nodefleet-karpenter";

/** Mints the token kubelet would project for `token` (TokenRequest with its audience and lifetime) into `file`. */
async function writeProjectedToken(
  admin: KubeIdentity,
  namespace: string,
  serviceAccount: string,
  token: ProjectedToken,
  file: string,
): Promise<string> {
  const answer = (await kube(admin, "POST", `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    spec: { audiences: [token.audience], expirationSeconds: token.expirationSeconds },
  })) as { status: { token: string } };
  writeFileSync(file, answer.status.token, { mode: 0o600 });
  return file;
}
