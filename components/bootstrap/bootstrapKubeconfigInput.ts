/**
 * What a bootstrap-token kubeconfig is built from, and its checks: the k0s worker join token
 * (k0sJoinToken.ts) and the kubeadm TLS-bootstrap kubeconfig (kubeadmBootstrapKubeconfig.ts) both
 * authenticate with a bootstrap token against an https API server they verify with the cluster CA.
 */

export interface BootstrapKubeconfigInput {
  /** The API server URL, `https://<host>:<port>` (k0s: the worker join URL `https://<externalAddress|address>:6443`). */
  readonly apiServer: string;
  /** The cluster CA certificate, PEM; embedded base64-encoded as certificate-authority-data. */
  readonly caCertificate: string;
  /** The bootstrap token `<id6>.<secret16>`; the rendered kubeconfig is a secret. */
  readonly token: string;
}

/** The bootstrap token format (k8s.io/cluster-bootstrap BootstrapTokenPattern). */
const BOOTSTRAP_TOKEN_PATTERN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;

/** Throws unless the token is `<id6>.<secret16>`; the message never contains the token. */
function assertBootstrapToken(token: string): void {
  if (!BOOTSTRAP_TOKEN_PATTERN.test(token)) {
    throw new Error(
      `bootstrap token must be 6 lower-case letters or digits, '.', then 16 lower-case letters or digits (got ${token.length} characters, value not shown)`,
    );
  }
}

/** Throws on a malformed token or a non-https API server (a bootstrap token must not travel in clear). */
export function assertBootstrapKubeconfigInput(input: BootstrapKubeconfigInput): void {
  assertBootstrapToken(input.token);
  if (!/^https:\/\/\S+$/.test(input.apiServer)) {
    throw new Error("apiServer must be an https:// URL such as https://203.0.113.10:6443");
  }
}

/** The kubeconfig `cluster` entry: the embedded CA, then the server (the order both tools write). */
export function bootstrapKubeconfigCluster(input: BootstrapKubeconfigInput): { "certificate-authority-data": string; server: string } {
  return {
    "certificate-authority-data": Buffer.from(input.caCertificate, "utf8").toString("base64"),
    server: input.apiServer,
  };
}
