/**
 * Worker user data, dispatched on the cluster kind, from the inputs of workerUserDataInputs.ts (the
 * single list of non-secret values the rendered text depends on, which the generation suffix hashes).
 */
import { encodeK0sJoinToken } from "./k0sJoinToken";
import { renderK0sWorkerCloudConfig } from "./k0sWorkerCloudConfig";
import { renderKubeadmWorkerUserData } from "./kubeadmWorkerCloudConfig";
import { type WorkerCluster, type WorkerMemberInput, workerUserDataInputs } from "./workerUserDataInputs";

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
        ...(inputs.nodeIp ? { nodeIp: inputs.nodeIp } : {}),
        ...(inputs.privateEgress ? { privateEgress: inputs.privateEgress } : {}),
      });
    case "kubeadm":
      return renderKubeadmWorkerUserData(inputs, bootstrapToken);
  }
}
