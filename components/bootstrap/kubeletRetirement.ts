/**
 * What a bare-metal box runs when its member leaves the pool but the box stays (a Robot server is
 * rented, not deleted): its kubelet must never register again. Kubernetes cannot revoke a kubelet's
 * x509 client certificate (no revocation check, kubernetes/kubernetes#18982; it stays valid until it
 * expires, and the NodeRestriction admission lets it recreate its own Node), so the box stops and
 * disables its node agent and deletes every credential it could join with: the kubelet's kubeconfig
 * and client certificates, the bootstrap kubeconfig and the k0s join token. The box keeps its system
 * and data; reinstalling or cancelling it is the owner's choice.
 */
import { K0S_KUBELET_CONF, K0S_TOKEN_FILE } from "./k0sWorkerCloudConfig";
import { KUBELET_PATHS } from "./kubeletConfig";

/** The credentials removed: kubeadm's and k0s's kubelet kubeconfigs, certificate directories, bootstrap files. */
const RETIRED_KUBELET_CREDENTIALS = [
  KUBELET_PATHS.kubeconfig,
  KUBELET_PATHS.bootstrapKubeconfig,
  "/var/lib/kubelet/pki",
  K0S_KUBELET_CONF,
  "/var/lib/k0s/kubelet/pki",
  K0S_TOKEN_FILE,
] as const;

/** The units that run a worker's kubelet: k0s's worker service, or the kubelet itself (kubeadm). */
export const NODE_AGENT_UNITS = ["k0sworker.service", "kubelet.service"] as const;

/**
 * The retirement script, run as root over the member's pinned SSH connection. Idempotent: a unit
 * that is not installed or a file already gone is not an error, so a retried removal succeeds.
 */
export function renderKubeletRetirementScript(hostname: string): string {
  return [
    "set -eu",
    // Stopped before the credentials go, so the running kubelet cannot renew or re-register with them.
    ...NODE_AGENT_UNITS.map((unit) => `systemctl disable --now ${unit} >/dev/null 2>&1 || true`),
    `rm -rf ${RETIRED_KUBELET_CREDENTIALS.join(" ")}`,
    `echo "${hostname}: node agent stopped and disabled, kubelet credentials removed" >&2`,
  ].join("\n");
}
