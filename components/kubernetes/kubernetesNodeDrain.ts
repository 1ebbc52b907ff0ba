/**
 * Drains a Kubernetes Node before the server running it is deleted, as `kubectl drain` does: cordon,
 * then evict every pod through the Eviction API (PodDisruptionBudgets hold; a 429 is retried until a
 * deadline), leaving DaemonSet and mirror pods; a drain that does not finish in time fails, naming
 * the pods left, and the server stays. A `pulumi.dynamic` resource per Node name that depends on its
 * server, so Pulumi drains before the server goes; the Node is deleted afterwards
 * (kubernetesNodeRemoval.ts). Bare-metal members keep their Node across a reinstall, so they drain
 * on create before an update: KubernetesNodeUpdateDrain, one per generation, which the update
 * depends on. Members created since nodefleet's plugin get its NodeDrain and NodeUpdateDrain instead
 * (provider/), which run the same `drainKubernetesNode`; these stay for the members created before.
 * Bare-metal members of the plugin also get its NodeDrain, one per member, for their removal.
 */
import * as pulumi from "@pulumi/pulumi";
import { DEFAULT_DRAIN_TIMEOUT_SECONDS } from "../fleet/rolloutPlan";
import { type KubernetesCredentials, kubernetesApiRequest, secretCredentialsJson } from "./kubernetesApiClient";

interface PodItem {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    annotations?: Record<string, string>;
    ownerReferences?: Array<{ kind?: string; controller?: boolean }>;
  };
  spec?: { priority?: number };
}

export interface DrainPod {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
}

/** How a drain splits a Node's pods: the ones to evict (lowest priority first) and the ones it leaves. */
export interface DrainSelection {
  readonly evict: readonly DrainPod[];
  readonly skipped: ReadonlyArray<DrainPod & { readonly reason: "daemonset" | "mirror" }>;
}

/** Splits a pod list (`GET /api/v1/pods?fieldSelector=spec.nodeName=...`) into pods to evict and pods left alone. */
export function drainSelection(podList: unknown): DrainSelection {
  const items = ((podList as { items?: unknown } | null)?.items ?? []) as PodItem[];
  const evict: Array<DrainPod & { priority: number }> = [];
  const skipped: Array<DrainPod & { reason: "daemonset" | "mirror" }> = [];
  for (const pod of Array.isArray(items) ? items : []) {
    const meta = pod?.metadata;
    if (!meta?.name || !meta.namespace) continue;
    const ref = { namespace: meta.namespace, name: meta.name, uid: meta.uid ?? "" };
    if (meta.annotations?.["kubernetes.io/config.mirror"] !== undefined) skipped.push({ ...ref, reason: "mirror" });
    else if ((meta.ownerReferences ?? []).some((o) => o.controller === true && o.kind === "DaemonSet"))
      skipped.push({ ...ref, reason: "daemonset" });
    else evict.push({ ...ref, priority: pod.spec?.priority ?? 0 });
  }
  const key = (p: DrainPod) => `${p.namespace}/${p.name}`;
  evict.sort((a, b) => a.priority - b.priority || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  return { evict: evict.map(({ priority: _priority, ...pod }) => pod), skipped };
}

export interface DrainOptions {
  /** Seconds until the drain fails. */
  readonly timeoutSeconds: number;
  /** Pause between eviction rounds. Default 2000 ms. */
  readonly pollIntervalMs?: number;
}

export interface DrainResult {
  /** Pods evicted, in eviction order (`namespace/name`). */
  readonly evicted: readonly string[];
  /** Pods left on the Node (`namespace/name`: daemonset or mirror). */
  readonly skipped: readonly string[];
}

/**
 * Cordons and drains `nodeName`; a Node that is already gone is drained. Fails (the message names the
 * Node, the pods left and the API's reason, never a credential) when the deadline passes, after
 * uncordoning a Node that this drain cordoned (as Karpenter lifts its disruption taint when a
 * disruption fails): the failed run leaves no capacity behind, whether the next run drains again or
 * the change is reverted; an operator's cordon stays.
 * Self-contained apart from kubernetesApiRequest: it runs from the serialized provider.
 */
export async function drainKubernetesNode(credentialsJson: string, nodeName: string, options: DrainOptions): Promise<DrainResult> {
  if (!credentialsJson) {
    throw new Error(`cannot drain Kubernetes Node ${nodeName}: no usable kubeconfig was configured when the node was declared`);
  }
  const creds = JSON.parse(credentialsJson) as KubernetesCredentials;
  const nodePath = `/api/v1/nodes/${encodeURIComponent(nodeName)}`;
  const node = (await kubernetesApiRequest(creds, "GET", nodePath, `reading Kubernetes Node ${nodeName}`)) as
    { spec?: { unschedulable?: boolean } } | undefined;
  if (node === undefined) return { evicted: [], skipped: [] };
  const setUnschedulable = (unschedulable: boolean) =>
    kubernetesApiRequest(creds, "PATCH", nodePath, `${unschedulable ? "cordoning" : "uncordoning"} Kubernetes Node ${nodeName}`, {
      contentType: "application/merge-patch+json",
      value: { spec: { unschedulable } },
    });
  const cordonedHere = node.spec?.unschedulable !== true;
  if ((await setUnschedulable(true)) === undefined) return { evicted: [], skipped: [] };
  try {
    return await evictAll(creds, nodeName, options);
  } catch (error) {
    if (!cordonedHere) throw error;
    const uncordoned = await setUnschedulable(false).then(
      () => "; the Node is schedulable again until the next run drains it",
      (uncordonError: unknown) =>
        `; uncordoning it again failed too (${(uncordonError as Error).message}): run kubectl uncordon ${nodeName}`,
    );
    throw Object.assign(new Error(`${(error as Error).message}${uncordoned}`), { status: (error as { status?: number }).status });
  }
}

/** Evicts the pods of a cordoned Node until none is left but DaemonSet and mirror pods, or fails at the deadline. */
async function evictAll(creds: KubernetesCredentials, nodeName: string, options: DrainOptions): Promise<DrainResult> {
  const deadline = Date.now() + options.timeoutSeconds * 1000;
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const list = await kubernetesApiRequest(
    creds,
    "GET",
    `/api/v1/pods?fieldSelector=${encodeURIComponent(`spec.nodeName=${nodeName}`)}`,
    `listing the pods of Kubernetes Node ${nodeName}`,
  );
  const selection = drainSelection(list);
  const podPath = (p: DrainPod) => `/api/v1/namespaces/${encodeURIComponent(p.namespace)}/pods/${encodeURIComponent(p.name)}`;
  const label = (p: DrainPod) => `${p.namespace}/${p.name}`;
  const evicted: string[] = [];
  // Pods still to evict, with the reason the last attempt was refused.
  const pending = new Map<string, { pod: DrainPod; refused?: string }>(selection.evict.map((p) => [label(p), { pod: p }]));
  const terminating = new Map<string, DrainPod>();
  for (;;) {
    for (const [key, entry] of pending) {
      try {
        await kubernetesApiRequest(creds, "POST", `${podPath(entry.pod)}/eviction`, `evicting pod ${key} from Node ${nodeName}`, {
          contentType: "application/json",
          value: { apiVersion: "policy/v1", kind: "Eviction", metadata: { name: entry.pod.name, namespace: entry.pod.namespace } },
        });
        pending.delete(key);
        evicted.push(key);
        terminating.set(key, entry.pod);
      } catch (error) {
        // 429: a PodDisruptionBudget forbids it now; retried until the deadline.
        if ((error as { status?: number }).status !== 429) throw error;
        entry.refused = (error as Error).message.replace(/^.*?HTTP 429: ?/, "") || "refused by a PodDisruptionBudget";
      }
    }
    for (const [key, pod] of terminating) {
      const now = (await kubernetesApiRequest(creds, "GET", podPath(pod), `reading pod ${key}`)) as
        { metadata?: { uid?: string } } | undefined;
      if (now === undefined || (pod.uid && now.metadata?.uid !== pod.uid)) terminating.delete(key);
    }
    if (pending.size === 0 && terminating.size === 0) return { evicted, skipped: selection.skipped.map(label) };
    if (Date.now() >= deadline) {
      const left = [
        ...[...pending.entries()].map(([key, e]) => `${key} (eviction refused: ${e.refused ?? "not attempted"})`),
        ...[...terminating.keys()].map((key) => `${key} (evicted, still terminating)`),
      ];
      throw new Error(
        `draining Kubernetes Node ${nodeName} did not finish within ${options.timeoutSeconds} s, so its server is kept and the rollout stops; pods left: ${left.join(", ")}`,
      );
    }
    await pause(Math.min(options.pollIntervalMs ?? 2000, Math.max(0, deadline - Date.now())));
  }
}

/** A drain's timeout (default 600 s), refused unless a whole number of seconds, at least 1; `name` is the resource's. */
export function checkedDrainTimeout(name: string, timeoutSeconds: number | undefined): number {
  const seconds = timeoutSeconds ?? DEFAULT_DRAIN_TIMEOUT_SECONDS;
  if (!Number.isInteger(seconds) || seconds < 1)
    throw new Error(`${name}: drainTimeoutSeconds must be a whole number of seconds, at least 1`);
  return seconds;
}

/** The id of the drain before a bare-metal member's update to `generation`. */
export const updateDrainId = (nodeName: string, generation: string): string => `${nodeName}-${generation}`;

interface NodeDrainState {
  nodeName: string;
  timeoutSeconds: number;
  credentials: string;
}

/** Inputs whose change makes another drain: another Node name (or, for an update drain, generation). A new timeout or credentials are stored in place. */
export const NODE_DRAIN_REPLACE_ON_CHANGES = ["nodeName", "generation"] as const;

function drainDiff(olds: NodeDrainState & { generation?: string }, news: NodeDrainState & { generation?: string }) {
  const replaces = NODE_DRAIN_REPLACE_ON_CHANGES.filter((key) => olds[key] !== news[key]);
  return {
    changes: replaces.length > 0 || olds.credentials !== news.credentials || olds.timeoutSeconds !== news.timeoutSeconds,
    replaces,
    deleteBeforeReplace: false,
  };
}

/** Exported for tests, which run its serialized form as the engine would. */
export const nodeDrainProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: NodeDrainState) {
    return { id: inputs.nodeName, outs: inputs };
  },
  async diff(_id: string, olds: NodeDrainState, news: NodeDrainState) {
    return drainDiff(olds, news);
  },
  async update(_id: string, _olds: NodeDrainState, news: NodeDrainState) {
    return { outs: news };
  },
  async delete(_id: string, props: NodeDrainState) {
    await drainKubernetesNode(props.credentials, props.nodeName, { timeoutSeconds: props.timeoutSeconds });
  },
};

export interface KubernetesNodeDrainArgs {
  /** The Kubernetes Node name (for Hetzner Cloud, the generation's server name). */
  readonly nodeName: string;
  /** Kubeconfig allowed to get and patch Nodes, list and get pods and create pods/eviction (token or client certificate); a secret. */
  readonly kubeconfig: pulumi.Input<string>;
  /** Seconds the drain may take before it fails. Default 600. */
  readonly timeoutSeconds?: number;
}

/** `pulumi-nodejs:dynamic/nodefleet:KubernetesNodeDrain`: deleting it drains the Node. */
export class KubernetesNodeDrain extends pulumi.dynamic.Resource {
  constructor(name: string, args: KubernetesNodeDrainArgs, opts?: pulumi.CustomResourceOptions) {
    const timeoutSeconds = checkedDrainTimeout(name, args.timeoutSeconds);
    const credentials = secretCredentialsJson(args.kubeconfig, `node ${args.nodeName}: it cannot be drained on removal`);
    super(
      nodeDrainProvider,
      name,
      { nodeName: args.nodeName, timeoutSeconds, credentials },
      { ...opts, additionalSecretOutputs: ["credentials"] },
      "nodefleet",
      "KubernetesNodeDrain",
    );
  }
}

/**
 * The drain of one Node name, `<nodeName>-drain`, depending on the server that runs it. None without
 * a kubeconfig (render and simulation).
 */
export function memberNodeDrain(
  nodeName: string,
  kubeconfig: pulumi.Input<string> | undefined,
  timeoutSeconds: number | undefined,
  server: pulumi.Resource,
  parent: pulumi.Resource,
): KubernetesNodeDrain | undefined {
  return kubeconfig === undefined
    ? undefined
    : new KubernetesNodeDrain(
        `${nodeName}-drain`,
        { nodeName, kubeconfig, ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}) },
        { parent, dependsOn: [server] },
      );
}

interface NodeUpdateDrainState extends NodeDrainState {
  /** The generation the member is updated to; the drain runs once per generation. */
  generation: string;
}

/**
 * Exported for tests. Creating it drains the Node (a Node not registered is drained); deleting it
 * changes nothing: the update it preceded uncordons the Node (kubernetesNodeMetadata.ts).
 */
export const nodeUpdateDrainProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: NodeUpdateDrainState) {
    await drainKubernetesNode(inputs.credentials, inputs.nodeName, { timeoutSeconds: inputs.timeoutSeconds });
    return { id: updateDrainId(inputs.nodeName, inputs.generation), outs: inputs };
  },
  async diff(_id: string, olds: NodeUpdateDrainState, news: NodeUpdateDrainState) {
    return drainDiff(olds, news);
  },
  async update(_id: string, _olds: NodeUpdateDrainState, news: NodeUpdateDrainState) {
    return { outs: news };
  },
  async delete() {},
};

export interface KubernetesNodeUpdateDrainArgs extends KubernetesNodeDrainArgs {
  /** The generation the member's machine is reinstalled, replaced or re-joined at once the drain is done. */
  readonly generation: string;
}

/**
 * `pulumi-nodejs:dynamic/nodefleet:KubernetesNodeUpdateDrain`: creating it drains the Node of a
 * bare-metal member whose machine is about to be reinstalled, replaced or re-joined in place (its
 * Node name stays, so there is no old Node to drain on delete). The update's first step depends on it.
 */
export class KubernetesNodeUpdateDrain extends pulumi.dynamic.Resource {
  constructor(name: string, args: KubernetesNodeUpdateDrainArgs, opts?: pulumi.CustomResourceOptions) {
    const timeoutSeconds = checkedDrainTimeout(name, args.timeoutSeconds);
    const credentials = secretCredentialsJson(args.kubeconfig, `node ${args.nodeName}: it cannot be drained before its update`);
    super(
      nodeUpdateDrainProvider,
      name,
      { nodeName: args.nodeName, generation: args.generation, timeoutSeconds, credentials },
      { ...opts, additionalSecretOutputs: ["credentials"] },
      "nodefleet",
      "KubernetesNodeUpdateDrain",
    );
  }
}

/**
 * The drain before a bare-metal member's update to `generation`, `<nodeName>-<generation>-drain`.
 * None without a kubeconfig (render and simulation).
 */
export function memberUpdateDrain(
  nodeName: string,
  generation: string,
  kubeconfig: pulumi.Input<string> | undefined,
  timeoutSeconds: number | undefined,
  parent: pulumi.Resource,
): KubernetesNodeUpdateDrain | undefined {
  return kubeconfig === undefined
    ? undefined
    : new KubernetesNodeUpdateDrain(
        `${nodeName}-${generation}-drain`,
        { nodeName, generation, kubeconfig, ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}) },
        { parent },
      );
}
