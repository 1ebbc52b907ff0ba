/**
 * What a worker's user data depends on: `workerUserDataInputs` is the single list of non-secret
 * values the rendered text depends on. The renderers (workerUserData.ts, selfJoinScript.ts) read
 * only those (plus the join secret), and the generation suffix hashes exactly those, so a server is
 * replaced when, and only when, its user data changes.
 */
import type { ClusterSpec, KubeletSettings, Taint } from "../fleet/fleetSpec";
import { partitionKubeletLabels } from "../fleet/kubeletLabels";
import type { NodeIpSource } from "./nodeIp";
import type { PrivateEgress } from "./privateEgressRoute";

/** The node-identity part of a member that its bootstrap renders. */
export interface WorkerMemberInput {
  /** Machine hostname and Kubernetes node name. */
  readonly hostname: string;
  /** `<scheme>:///<clusterId>/<nodeId>`, or HCLOUD_PROVIDER_ID_FROM_METADATA: `hcloud://<server id>` read at boot. */
  readonly providerID: string;
  /** Registration labels; keys the kubelet refuses are left out of the rendering. */
  readonly labels: Readonly<Record<string, string>>;
  /** Taints registered with the node. */
  readonly taints: readonly Taint[];
  /** The kubelet's `--node-ip` (its private address, or the subnet to find it in). Default: the kubelet's choice. */
  readonly nodeIp?: NodeIpSource;
  /** A node without public IPv4: its default route via the private network's gateway (privateEgressRoute.ts). Default: none. */
  readonly privateEgress?: PrivateEgress;
}

export type WorkerCluster = Pick<
  ClusterSpec,
  "kind" | "apiServer" | "caCertificate" | "k0sVersion" | "k0sSha256" | "kubernetesVersion" | "kubelet"
>;

/** What every worker's user data depends on, whatever the cluster kind. */
interface CommonWorkerUserDataInputs extends WorkerMemberInput {
  /** The API server URL the kubelet bootstraps against. */
  readonly apiServer: string;
  /** The cluster CA, PEM (not a secret). */
  readonly caCertificate: string;
  /** Only labels the kubelet accepts at registration, keys sorted. */
  readonly labels: Readonly<Record<string, string>>;
  /** Max pods, reservations and eviction thresholds. */
  readonly kubelet: KubeletSettings;
}

export interface K0sWorkerUserDataInputs extends CommonWorkerUserDataInputs {
  readonly kind: "k0s";
  /** Pinned k0s release, e.g. v1.33.4+k0s.0. */
  readonly k0sVersion: string;
  /** Pinned sha256 of the k0s binary per architecture; else the release's sha256sums.txt is used. */
  readonly k0sSha256?: ClusterSpec["k0sSha256"];
}

export interface KubeadmWorkerUserDataInputs extends CommonWorkerUserDataInputs {
  readonly kind: "kubeadm";
  /** e.g. v1.33.4: the pkgs.k8s.io channel and package version. */
  readonly kubernetesVersion: string;
}

export type WorkerUserDataInputs = K0sWorkerUserDataInputs | KubeadmWorkerUserDataInputs;

/**
 * Labels restricted by the kubelet are left out (Karpenter applies NodeClaim labels itself) and keys
 * are sorted, so that reordering labels in config changes neither the user data nor the generation.
 */
function registrationLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const { accepted } = partitionKubeletLabels(labels);
  return Object.fromEntries(
    Object.keys(accepted)
      .sort()
      .map((key) => [key, accepted[key]]),
  );
}

export function workerUserDataInputs(cluster: WorkerCluster, member: WorkerMemberInput): WorkerUserDataInputs {
  const common = {
    apiServer: cluster.apiServer,
    caCertificate: cluster.caCertificate,
    hostname: member.hostname,
    providerID: member.providerID,
    labels: registrationLabels(member.labels),
    taints: member.taints.map((t) => ({ ...t })),
    kubelet: cluster.kubelet,
    ...(member.nodeIp ? { nodeIp: { ...member.nodeIp } } : {}),
    ...(member.privateEgress ? { privateEgress: { ...member.privateEgress } } : {}),
  };
  switch (cluster.kind) {
    case "k0s":
      if (!cluster.k0sVersion) throw new Error(`node ${member.hostname}: k0sVersion is required for k0s clusters`);
      return {
        kind: "k0s",
        k0sVersion: cluster.k0sVersion,
        ...(cluster.k0sSha256 ? { k0sSha256: cluster.k0sSha256 } : {}),
        ...common,
      };
    case "kubeadm":
      if (!cluster.kubernetesVersion) throw new Error(`node ${member.hostname}: kubernetesVersion is required for kubeadm clusters`);
      return { kind: "kubeadm", kubernetesVersion: cluster.kubernetesVersion, ...common };
  }
}

/**
 * What a re-run of the (idempotent) self-join converges on a joined node: every input but the
 * labels and taints, which the kubelet applies only when it registers the Node (a running Node gets
 * them through the API, kubernetes/kubernetesNodeMetadata.ts). Bare-metal pools hash it to decide
 * when the join re-runs.
 */
export function joinConvergedInputs(inputs: WorkerUserDataInputs): Omit<WorkerUserDataInputs, "labels" | "taints"> {
  const { labels: _labels, taints: _taints, ...converged } = inputs;
  return converged;
}
