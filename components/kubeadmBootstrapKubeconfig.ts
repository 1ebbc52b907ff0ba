/**
 * The bootstrap kubeconfig a kubeadm-cluster kubelet uses for TLS bootstrap: it authenticates with
 * the node's bootstrap token (group system:bootstrappers:kubeadm:default-node-token), files a CSR,
 * and ends with its own `system:node:<name>` client certificate in /etc/kubernetes/kubelet.conf.
 * Names follow what `kubeadm join` writes to bootstrap-kubelet.conf.
 */
import { stringify } from "yaml";
import { assertBootstrapToken } from "./k0sJoinToken";

export const KUBEADM_CLUSTER_NAME = "kubernetes";
export const KUBEADM_BOOTSTRAP_USER = "tls-bootstrap-token-user";
export const KUBEADM_BOOTSTRAP_CONTEXT = `${KUBEADM_BOOTSTRAP_USER}@${KUBEADM_CLUSTER_NAME}`;

export interface BootstrapKubeconfigInput {
  /** The apiserver URL, https://host:port. */
  readonly apiServer: string;
  /** The cluster CA, PEM (embedded base64-encoded as certificate-authority-data). */
  readonly caCertificate: string;
  /** The bootstrap token `<id6>.<secret16>`; the result is a secret. */
  readonly token: string;
}

export function renderBootstrapKubeconfig(input: BootstrapKubeconfigInput): string {
  assertBootstrapToken(input.token);
  if (!/^https:\/\/\S+$/.test(input.apiServer)) {
    throw new Error("apiServer must be an https:// URL such as https://203.0.113.10:6443");
  }
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: KUBEADM_CLUSTER_NAME,
        cluster: {
          "certificate-authority-data": Buffer.from(input.caCertificate, "utf8").toString("base64"),
          server: input.apiServer,
        },
      },
    ],
    contexts: [
      { name: KUBEADM_BOOTSTRAP_CONTEXT, context: { cluster: KUBEADM_CLUSTER_NAME, user: KUBEADM_BOOTSTRAP_USER } },
    ],
    "current-context": KUBEADM_BOOTSTRAP_CONTEXT,
    preferences: {},
    users: [{ name: KUBEADM_BOOTSTRAP_USER, user: { token: input.token } }],
  };
  return stringify(kubeconfig, { lineWidth: 0 });
}
