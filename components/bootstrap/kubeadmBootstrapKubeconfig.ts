/**
 * The bootstrap kubeconfig a kubeadm-cluster kubelet uses for TLS bootstrap: it authenticates with
 * the node's bootstrap token (group system:bootstrappers:kubeadm:default-node-token), files a CSR,
 * and ends with its own `system:node:<name>` client certificate in /etc/kubernetes/kubelet.conf.
 * Names follow what `kubeadm join` writes to bootstrap-kubelet.conf.
 */
import { stringify } from "yaml";
import { type BootstrapKubeconfigInput, assertBootstrapKubeconfigInput, bootstrapKubeconfigCluster } from "./bootstrapKubeconfigInput";

export const KUBEADM_CLUSTER_NAME = "kubernetes";
export const KUBEADM_BOOTSTRAP_USER = "tls-bootstrap-token-user";
export const KUBEADM_BOOTSTRAP_CONTEXT = `${KUBEADM_BOOTSTRAP_USER}@${KUBEADM_CLUSTER_NAME}`;

export function renderBootstrapKubeconfig(input: BootstrapKubeconfigInput): string {
  assertBootstrapKubeconfigInput(input);
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: KUBEADM_CLUSTER_NAME,
        cluster: bootstrapKubeconfigCluster(input),
      },
    ],
    contexts: [{ name: KUBEADM_BOOTSTRAP_CONTEXT, context: { cluster: KUBEADM_CLUSTER_NAME, user: KUBEADM_BOOTSTRAP_USER } }],
    "current-context": KUBEADM_BOOTSTRAP_CONTEXT,
    preferences: {},
    users: [{ name: KUBEADM_BOOTSTRAP_USER, user: { token: input.token } }],
  };
  return stringify(kubeconfig, { lineWidth: 0 });
}
