/**
 * Worker user data, dispatched on the cluster kind. `workerUserDataInputs` is the single list of
 * non-secret values the rendered text depends on: the renderer reads only those (plus the join
 * secret), and the generation suffix hashes exactly those, so a server is replaced when, and only
 * when, its user data changes.
 */
import type { ClusterSpec, KubeletSettings, Taint } from "./fleetSpec";
import { encodeK0sJoinToken } from "./k0sJoinToken";
import { renderK0sWorkerCloudConfig } from "./k0sWorkerCloudConfig";
import { partitionKubeletLabels } from "./kubeletLabels";

/** The node-identity part of a member that its bootstrap renders. */
export interface WorkerMemberInput {
  readonly hostname: string;
  readonly providerID: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
}

export type WorkerCluster = Pick<
  ClusterSpec,
  "kind" | "apiServer" | "caCertificate" | "k0sVersion" | "k0sSha256" | "kubernetesVersion" | "kubelet"
>;

export interface K0sWorkerUserDataInputs {
  readonly kind: "k0s";
  readonly k0sVersion: string;
  readonly k0sSha256?: ClusterSpec["k0sSha256"];
  readonly apiServer: string;
  readonly caCertificate: string;
  readonly hostname: string;
  readonly providerID: string;
  /** Only labels the kubelet accepts at registration, keys sorted. */
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly kubelet: KubeletSettings;
}

export interface KubeadmWorkerUserDataInputs {
  readonly kind: "kubeadm";
  readonly kubernetesVersion: string;
  readonly apiServer: string;
  readonly caCertificate: string;
  readonly hostname: string;
  readonly providerID: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly kubelet: KubeletSettings;
}

export type WorkerUserDataInputs = K0sWorkerUserDataInputs | KubeadmWorkerUserDataInputs;

/**
 * Labels restricted by the kubelet are left out (Karpenter applies NodeClaim labels itself) and keys
 * are sorted, so that reordering labels in config changes neither the user data nor the generation.
 */
function registrationLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const { accepted } = partitionKubeletLabels(labels);
  return Object.fromEntries(Object.keys(accepted).sort().map((key) => [key, accepted[key]]));
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
 * The user data of one worker. `bootstrapToken` is the node's `<id6>.<secret16>` bootstrap token
 * (k0s clusters get it wrapped in a k0s join token); the result contains it, so callers keep it secret.
 */
export function renderWorkerUserData(cluster: WorkerCluster, member: WorkerMemberInput, bootstrapToken: string): string {
  const inputs = workerUserDataInputs(cluster, member);
  switch (inputs.kind) {
    case "k0s":
      return renderK0sWorkerCloudConfig({
        k0sVersion: inputs.k0sVersion,
        ...(inputs.k0sSha256 ? { k0sSha256: inputs.k0sSha256 } : {}),
        joinToken: encodeK0sJoinToken({ apiServer: inputs.apiServer, caCertificate: inputs.caCertificate, token: bootstrapToken }),
        hostname: inputs.hostname,
        providerID: inputs.providerID,
        labels: inputs.labels,
        taints: inputs.taints,
        kubelet: inputs.kubelet,
      });
    case "kubeadm":
      throw new Error(
        `kubeadm clusters: the worker user data renderer is not available yet (node ${inputs.hostname}); use kind k0s for now`,
      );
  }
}
