/**
 * Keeps a running Node's pool labels and taints as declared: the kubelet applies `--node-labels` and
 * `--register-with-taints` only at registration, and a bare-metal member keeps its Node name across
 * reinstalls. Create and update wait for the Node to register, then send one JSON merge patch with
 * its resourceVersion (a 409 is retried): labels it set and no longer declares are removed; taints
 * match by key and effect, so others' stay. A moved `generation` also uncordons the Node. Deleting
 * it changes nothing. A `pulumi.dynamic` resource: its serialized provider uses only Node built-ins
 * (kubernetesApiClient.ts) and the connection details extracted from the kubeconfig. Members created
 * since nodefleet's plugin get its NodeMetadata instead (provider/nodeMetadataResource.ts), which
 * runs the same `convergeNodeMetadata`; this one stays for the members created before.
 */
import * as pulumi from "@pulumi/pulumi";
import type { Taint } from "../fleet/fleetSpec";
import { type KubernetesCredentials, kubernetesApiRequest, secretCredentialsJson } from "./kubernetesApiClient";

interface NodeTaint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}

interface NodeObject {
  metadata?: { resourceVersion?: string; labels?: Record<string, string> };
  spec?: { taints?: NodeTaint[]; unschedulable?: boolean };
}

/** What this resource declared (and so owns) on the Node. */
export interface ManagedNodeMetadata {
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
}

const taintId = (t: { key: string; effect: string }) => `${t.key}:${t.effect}`;

/**
 * The merge patch turning `node` into one carrying `desired`, given what was `previous`ly declared:
 * undefined when nothing needs to change. Pure; exported for tests.
 */
export function nodeMetadataPatch(
  node: NodeObject,
  previous: ManagedNodeMetadata | undefined,
  desired: ManagedNodeMetadata,
  uncordon = false,
): Record<string, unknown> | undefined {
  const current = node.metadata?.labels ?? {};
  const labels: Record<string, string | null> = {};
  for (const key of Object.keys(previous?.labels ?? {})) if (!(key in desired.labels) && key in current) labels[key] = null;
  for (const [key, value] of Object.entries(desired.labels)) if (current[key] !== value) labels[key] = value;

  const owned = new Set([...(previous?.taints ?? []), ...desired.taints].map(taintId));
  const existing = node.spec?.taints ?? [];
  const kept = existing.filter((t) => !owned.has(taintId(t)));
  const wanted = desired.taints.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect }));
  const taints = [...kept, ...wanted];
  const sameTaints =
    taints.length === existing.length &&
    wanted.every((w) => existing.some((e) => taintId(e) === taintId(w) && (e.value ?? "") === (w.value ?? "")));

  const schedule = uncordon && node.spec?.unschedulable === true;
  if (Object.keys(labels).length === 0 && sameTaints && !schedule) return undefined;
  const spec = { ...(sameTaints ? {} : { taints }), ...(schedule ? { unschedulable: false } : {}) };
  return {
    metadata: { resourceVersion: node.metadata?.resourceVersion, ...(Object.keys(labels).length > 0 ? { labels } : {}) },
    ...(Object.keys(spec).length > 0 ? { spec } : {}),
  };
}

/** What a Node metadata resource declares (its inputs but the credentials), shared by the dynamic and the plugin resource. */
export interface DeclaredNodeMetadata {
  nodeName: string;
  labels: Record<string, string>;
  taints: Taint[];
  /** How long to wait for the Node to register (a bare-metal install takes minutes). */
  registrationTimeoutSeconds: number;
  /** The member's machine generation (bare metal); absent in state written before it was recorded. */
  generation?: string;
}

interface NodeMetadataState extends DeclaredNodeMetadata {
  credentials: string;
}

/** Default of `registrationTimeoutSeconds`. */
export const DEFAULT_REGISTRATION_TIMEOUT_SECONDS = 1800;

/** Taints as the resource declares them: key, effect and a value only when it has one. */
export function declaredTaints(taints: readonly Taint[]): Taint[] {
  return taints.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect }));
}

/** The member moved to another generation since the last update: its drain cordoned the Node, which this update uncordons. */
function movedGeneration(olds: DeclaredNodeMetadata | undefined, news: DeclaredNodeMetadata): boolean {
  return olds?.generation !== undefined && news.generation !== undefined && olds.generation !== news.generation;
}

/**
 * GETs the Node until it exists, then patches it to carry `news` (what `olds` declared and `news`
 * no longer does is removed); retried on a resourceVersion conflict. The dynamic provider and the
 * plugin's handler (provider/nodeMetadataResource.ts) both run it.
 */
export async function convergeNodeMetadata(
  credentialsJson: string,
  olds: DeclaredNodeMetadata | undefined,
  news: DeclaredNodeMetadata,
): Promise<void> {
  if (!credentialsJson) {
    throw new Error(
      `cannot set the labels and taints of Kubernetes Node ${news.nodeName}: no usable kubeconfig (token or client-certificate user) was configured`,
    );
  }
  const creds = JSON.parse(credentialsJson) as KubernetesCredentials;
  const path = `/api/v1/nodes/${encodeURIComponent(news.nodeName)}`;
  const deadline = Date.now() + news.registrationTimeoutSeconds * 1000;
  const previous = olds ? { labels: olds.labels, taints: olds.taints } : undefined;
  for (let conflicts = 0; ;) {
    const node = (await kubernetesApiRequest(creds, "GET", path, `reading Kubernetes Node ${news.nodeName}`)) as NodeObject | undefined;
    if (node === undefined) {
      if (Date.now() > deadline) {
        throw new Error(
          `Kubernetes Node ${news.nodeName} did not register within ${news.registrationTimeoutSeconds}s, so its labels and taints were not set`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 10_000));
      continue;
    }
    const patch = nodeMetadataPatch(node, previous, { labels: news.labels, taints: news.taints }, movedGeneration(olds, news));
    if (patch === undefined) return;
    try {
      await kubernetesApiRequest(creds, "PATCH", path, `patching the labels and taints of Kubernetes Node ${news.nodeName}`, {
        contentType: "application/merge-patch+json",
        value: patch,
      });
      return;
    } catch (error) {
      conflicts += 1;
      if (!/HTTP 409/.test((error as Error).message) || conflicts >= 5) throw error;
    }
  }
}

/** Exported for tests, which run its serialized form as the engine would. */
export const nodeMetadataProvider: pulumi.dynamic.ResourceProvider = {
  async create(inputs: NodeMetadataState) {
    await convergeNodeMetadata(inputs.credentials, undefined, inputs);
    return { id: inputs.nodeName, outs: inputs };
  },
  async diff(_id: string, olds: NodeMetadataState, news: NodeMetadataState) {
    const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
    return {
      changes:
        olds.nodeName !== news.nodeName ||
        olds.credentials !== news.credentials ||
        olds.generation !== news.generation ||
        !same(olds.labels, news.labels) ||
        !same(olds.taints, news.taints),
      replaces: olds.nodeName !== news.nodeName ? ["nodeName"] : [],
      deleteBeforeReplace: false,
    };
  },
  async update(_id: string, olds: NodeMetadataState, news: NodeMetadataState) {
    await convergeNodeMetadata(news.credentials, olds, news);
    return { outs: news };
  },
  // The Node goes with its member (kubernetesNodeRemoval.ts); nothing to undo here.
  async delete() {},
};

export interface KubernetesNodeMetadataArgs {
  /** The Kubernetes Node name (the member's hostname). */
  readonly nodeName: string;
  /** The pool's labels for the Node (the private-IPv4 label included); keys set here and later dropped are removed. */
  readonly labels: Readonly<Record<string, pulumi.Input<string>>>;
  /** The pool's taints; matched on the Node by key and effect. */
  readonly taints: readonly Taint[];
  /** Kubeconfig allowed to get and patch Nodes (token or client-certificate user); a secret. */
  readonly kubeconfig: pulumi.Input<string>;
  /** How long create and update wait for the Node to register. Default 1800 s. */
  readonly registrationTimeoutSeconds?: number;
  /**
   * The member's machine generation. When it moves (the member was drained, then reinstalled,
   * replaced or re-joined), the update after the join also uncordons the Node. Default none.
   */
  readonly generation?: string;
}

/** `pulumi-nodejs:dynamic/nodefleet:KubernetesNodeMetadata`: the Node's pool labels and taints. */
export class KubernetesNodeMetadata extends pulumi.dynamic.Resource {
  constructor(name: string, args: KubernetesNodeMetadataArgs, opts?: pulumi.CustomResourceOptions) {
    const credentials = secretCredentialsJson(args.kubeconfig, `node ${args.nodeName}: its labels and taints cannot be set`);
    super(
      nodeMetadataProvider,
      name,
      {
        nodeName: args.nodeName,
        credentials,
        labels: args.labels,
        taints: declaredTaints(args.taints),
        registrationTimeoutSeconds: args.registrationTimeoutSeconds ?? DEFAULT_REGISTRATION_TIMEOUT_SECONDS,
        ...(args.generation !== undefined ? { generation: args.generation } : {}),
      },
      { ...opts, additionalSecretOutputs: ["credentials"] },
      "nodefleet",
      "KubernetesNodeMetadata",
    );
  }
}
