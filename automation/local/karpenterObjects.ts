/**
 * What Karpenter with nodefleet's driver needs in a cluster, built from an autoscaled pool of a
 * stack and applied idempotently (server-side apply): Karpenter's and the driver's CRDs from the
 * chart, the namespace and Secret holding the scaling API's token, a NodefleetNodeClass pointing at
 * the API, cluster and pool, and a NodePool whose server types, limits, labels and taints are the
 * pool's, so Karpenter asks only for what the API will grant. Used by `nodefleet local karpenter`
 * and the Karpenter end-to-end test on the local cloud.
 */
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import type { FleetSpec, HcloudAutoscaledPool, Taint } from "../../components/fleet/fleetSpec";
import { KubeApiError, type KubeIdentity, kube, kubeCreate } from "./kubeClient";

/** The chart's CRDs (Karpenter's at the pinned version and NodefleetNodeClass), from this package. */
const KARPENTER_CRDS_DIR = join(__dirname, "..", "..", "..", "driver", "charts", "nodefleet-karpenter", "crds");
/** The namespace the driver runs for (SYSTEM_NAMESPACE): it reads token Secrets only there. */
export const KARPENTER_NAMESPACE = "karpenter";
export const TOKEN_SECRET = "nodefleet-api-token";
/** The field manager of nodefleet's server-side applies. */
const FIELD_MANAGER = "nodefleet";

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/** The autoscaled pool `name` of `fleet`, or its only one; errors name the autoscaled pools there are. */
export function autoscaledPoolOf(fleet: FleetSpec, name?: string): HcloudAutoscaledPool {
  const autoscaled = fleet.pools.filter((p): p is HcloudAutoscaledPool => p.provider === "hcloud" && p.mode === "autoscaled");
  const names = autoscaled.map((p) => p.name).join(", ") || "none";
  if (name === undefined) {
    if (autoscaled.length === 1) return autoscaled[0]!;
    throw new Error(
      autoscaled.length === 0
        ? "the stack has no autoscaled pool (mode: autoscaled) for Karpenter to scale"
        : `the stack has several autoscaled pools (${names}): say which with --pool`,
    );
  }
  const pool = fleet.pools.find((p) => p.name === name);
  if (!pool) throw new Error(`the stack has no pool ${name}; its autoscaled pools: ${names}`);
  if (!autoscaled.includes(pool as HcloudAutoscaledPool))
    throw new Error(
      `pool ${name} is ${"mode" in pool ? pool.mode : "static"}, not autoscaled: Karpenter needs an autoscaled pool (this stack's: ${names})`,
    );
  return pool as HcloudAutoscaledPool;
}

/** Every CRD document in `dir` (default: the chart's). */
export function karpenterCrds(dir: string = KARPENTER_CRDS_DIR): KubeObject[] {
  if (!existsSync(dir))
    throw new Error(
      `the chart's CRDs are not at ${dir}: run nodefleet from a checkout of its repository (driver/ is not in the npm package)`,
    );
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .flatMap((file) => parseAllDocuments(readFileSync(join(dir, file), "utf8")).map((doc) => doc.toJSON() as KubeObject | null))
    .filter((crd): crd is KubeObject => crd !== null && crd.kind === "CustomResourceDefinition");
}

function namespaceObject(name: string = KARPENTER_NAMESPACE): KubeObject {
  return { apiVersion: "v1", kind: "Namespace", metadata: { name } };
}

/** The Secret the NodeClass's tokenSecretRef names, in the driver's namespace. */
export function tokenSecret(token: string, options: { name?: string; namespace?: string } = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name: options.name ?? TOKEN_SECRET, namespace: options.namespace ?? KARPENTER_NAMESPACE },
    type: "Opaque",
    data: { token: Buffer.from(token).toString("base64") },
  };
}

export interface NodeClassOptions {
  readonly name: string;
  /** The scaling API's base URL as the driver reaches it. */
  readonly endpoint: string;
  readonly clusterId: string;
  readonly pool: string;
  readonly secretName?: string;
  readonly namespace?: string;
}

export function nodeClass(options: NodeClassOptions): KubeObject {
  return {
    apiVersion: "karpenter.nodefleet.io/v1alpha1",
    kind: "NodefleetNodeClass",
    metadata: { name: options.name },
    spec: {
      endpoint: options.endpoint,
      clusterID: options.clusterId,
      pool: options.pool,
      tokenSecretRef: { name: options.secretName ?? TOKEN_SECRET, namespace: options.namespace ?? KARPENTER_NAMESPACE, key: "token" },
    },
  };
}

export interface NodePoolOptions {
  readonly name: string;
  readonly nodeClassName: string;
  /** How long a node stays empty or underused before consolidation. Default 30s. */
  readonly consolidateAfter?: string;
}

/**
 * A NodePool mirroring `pool`: its server types as the only instance types, its limits (maxNodes,
 * cpu, memoryGiB) as the NodePool's, so Karpenter stops before the API refuses, and its labels and
 * taints in the template, so Karpenter schedules pods onto its nodes knowing what they will carry.
 */
export function nodePool(pool: HcloudAutoscaledPool, options: NodePoolOptions): KubeObject {
  const limits: Record<string, string> = { nodes: String(pool.limits.maxNodes) };
  if (pool.limits.cpu !== undefined) limits.cpu = String(pool.limits.cpu);
  if (pool.limits.memoryGiB !== undefined) limits.memory = `${pool.limits.memoryGiB}Gi`;
  const labels = { ...pool.labels };
  return {
    apiVersion: "karpenter.sh/v1",
    kind: "NodePool",
    metadata: { name: options.name },
    spec: {
      template: {
        ...(Object.keys(labels).length > 0 ? { metadata: { labels } } : {}),
        spec: {
          nodeClassRef: { group: "karpenter.nodefleet.io", kind: "NodefleetNodeClass", name: options.nodeClassName },
          requirements: [
            { key: "karpenter.sh/capacity-type", operator: "In", values: ["on-demand"] },
            { key: "node.kubernetes.io/instance-type", operator: "In", values: [...pool.serverTypes] },
          ],
          ...(pool.taints.length > 0 ? { taints: pool.taints.map(taintOf) } : {}),
          expireAfter: "Never",
        },
      },
      limits,
      disruption: { consolidationPolicy: "WhenEmptyOrUnderutilized", consolidateAfter: options.consolidateAfter ?? "30s" },
    },
  };
}

function taintOf(t: Taint): Taint {
  return { key: t.key, ...(t.value !== undefined ? { value: t.value } : {}), effect: t.effect };
}

export interface InflateOptions {
  readonly replicas: number;
  /** Each pod's CPU request. */
  readonly cpu: string;
  /** Only on nodes of this NodePool (a node selector), so pods wait for Karpenter rather than land elsewhere. */
  readonly nodePool?: string;
  /** Tolerated, e.g. the pool's taints. */
  readonly taints?: readonly Taint[];
}

/** `inflate` in `default`: pause pods that request `cpu` and 256Mi each, for Karpenter to make room for. */
export function inflateDeployment(options: InflateOptions): KubeObject {
  const tolerations = (options.taints ?? []).map((t) => ({
    key: t.key,
    operator: t.value !== undefined ? "Equal" : "Exists",
    ...(t.value !== undefined ? { value: t.value } : {}),
    effect: t.effect,
  }));
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: "inflate", namespace: "default" },
    spec: {
      replicas: options.replicas,
      selector: { matchLabels: { app: "inflate" } },
      template: {
        metadata: { labels: { app: "inflate" } },
        spec: {
          terminationGracePeriodSeconds: 0,
          ...(options.nodePool !== undefined ? { nodeSelector: { "karpenter.sh/nodepool": options.nodePool } } : {}),
          ...(tolerations.length > 0 ? { tolerations } : {}),
          containers: [
            { name: "inflate", image: "registry.invalid/pause:3.9", resources: { requests: { cpu: options.cpu, memory: "256Mi" } } },
          ],
        },
      },
    },
  };
}

/** The REST path of an object (for the kinds built here). */
export function objectPath(object: KubeObject): string {
  const plural: Record<string, string> = {
    CustomResourceDefinition: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    Namespace: "/api/v1/namespaces",
    NodefleetNodeClass: "/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses",
    NodePool: "/apis/karpenter.sh/v1/nodepools",
  };
  const namespaced: Record<string, string> = { Secret: "secrets", Deployment: "deployments" };
  const { kind, metadata } = object;
  if (plural[kind]) return `${plural[kind]}/${metadata.name}`;
  if (namespaced[kind]) {
    const group = object.apiVersion === "v1" ? "/api/v1" : `/apis/${object.apiVersion}`;
    return `${group}/namespaces/${metadata.namespace ?? "default"}/${namespaced[kind]}/${metadata.name}`;
  }
  throw new Error(`no path known for kind ${kind}`);
}

/** Creates or updates `object` to exactly these fields (server-side apply, taking them over from other managers). */
async function applyObject(admin: KubeIdentity, object: KubeObject): Promise<void> {
  await kube(admin, "PATCH", `${objectPath(object)}?fieldManager=${FIELD_MANAGER}&force=true`, object, "application/apply-patch+yaml");
}

/** Creates `object` unless it exists (what a user changed since, e.g. replicas, stays). */
export async function createObject(admin: KubeIdentity, object: KubeObject): Promise<void> {
  const path = objectPath(object);
  await kubeCreate(admin, path.slice(0, path.lastIndexOf("/")), object);
}

/** Whether every named CRD reports Established. */
async function crdsEstablished(admin: KubeIdentity, names: readonly string[]): Promise<boolean> {
  const list = (await kube(admin, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")) as {
    items: Array<{ metadata: { name: string }; status?: { conditions?: Array<{ type: string; status: string }> } }>;
  };
  const established = new Set(
    list.items
      .filter((c) => c.status?.conditions?.some((x) => x.type === "Established" && x.status === "True"))
      .map((c) => c.metadata.name),
  );
  return names.every((n) => established.has(n));
}

/** The NodeClass's Ready condition, once the driver has reported one. */
export async function nodeClassReadiness(admin: KubeIdentity, name: string): Promise<{ ready: boolean; message?: string } | undefined> {
  const object = (await kube(admin, "GET", `/apis/karpenter.nodefleet.io/v1alpha1/nodefleetnodeclasses/${name}`)) as {
    status?: { conditions?: Array<{ type: string; status: string; message?: string }> };
  };
  const ready = object.status?.conditions?.find((c) => c.type === "Ready");
  return ready ? { ready: ready.status === "True", ...(ready.message ? { message: ready.message } : {}) } : undefined;
}

export interface KarpenterObjects {
  readonly crds: KubeObject[];
  readonly namespace: KubeObject;
  readonly secret: KubeObject;
  readonly nodeClass: KubeObject;
  readonly nodePool: KubeObject;
}

/** The objects for `pool` of the cluster `clusterId` served at `endpoint` with `token`. */
export function karpenterObjects(options: {
  pool: HcloudAutoscaledPool;
  clusterId: string;
  endpoint: string;
  token: string;
  nodeClassName: string;
  nodePoolName: string;
  consolidateAfter?: string;
}): KarpenterObjects {
  return {
    crds: karpenterCrds(),
    namespace: namespaceObject(),
    secret: tokenSecret(options.token),
    nodeClass: nodeClass({
      name: options.nodeClassName,
      endpoint: options.endpoint,
      clusterId: options.clusterId,
      pool: options.pool.name,
    }),
    nodePool: nodePool(options.pool, {
      name: options.nodePoolName,
      nodeClassName: options.nodeClassName,
      ...(options.consolidateAfter ? { consolidateAfter: options.consolidateAfter } : {}),
    }),
  };
}

/**
 * Applies the CRDs and waits until the API server serves them (up to `crdTimeoutMs`, default 60 s),
 * then the namespace, Secret, NodeClass and NodePool. Running it again updates them in place.
 */
export async function applyKarpenterObjects(admin: KubeIdentity, objects: KarpenterObjects, crdTimeoutMs = 60_000): Promise<void> {
  for (const crd of objects.crds) await applyObject(admin, crd);
  const names = objects.crds.map((c) => c.metadata.name);
  const deadline = Date.now() + crdTimeoutMs;
  while (!(await crdsEstablished(admin, names))) {
    if (Date.now() > deadline) throw new Error(`the CRDs ${names.join(", ")} were not Established within ${crdTimeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
  for (const object of [objects.namespace, objects.secret]) await applyObject(admin, object);
  // Established CRDs may take a moment more to be served for writes (404 until then).
  for (const object of [objects.nodeClass, objects.nodePool]) {
    for (;;) {
      try {
        await applyObject(admin, object);
        break;
      } catch (error) {
        if (!(error instanceof KubeApiError && error.status === 404) || Date.now() > deadline) throw error;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }
}
