/**
 * k0s worker join tokens, built offline from a bootstrap token: a kubeconfig in the shape k0s's
 * `pkg/token.GenerateKubeconfig` writes (client-go `clientcmd.Write`), gzip at best compression,
 * then standard base64 with padding (`pkg/token/joinencode.go`).
 */
import { gunzipSync, gzipSync, constants as zlibConstants } from "node:zlib";
import { stringify } from "yaml";

export interface K0sJoinTokenInput {
  /** The worker join URL, `https://<externalAddress|address>:6443`. */
  apiServer: string;
  /** The cluster CA certificate, PEM; embedded base64-encoded as certificate-authority-data. */
  caCertificate: string;
  /** The bootstrap token `<id6>.<secret16>`. */
  token: string;
}

/** The bootstrap token format (k8s.io/cluster-bootstrap BootstrapTokenPattern). */
export const BOOTSTRAP_TOKEN_PATTERN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;

/** k0s names cluster and context `k0s`; workers reject join tokens for any user but this one. */
export const K0S_CONTEXT_NAME = "k0s";
export const K0S_WORKER_USER = "kubelet-bootstrap";

/** Throws unless the token is `<id6>.<secret16>`; the message never contains the token. */
export function assertBootstrapToken(token: string): void {
  if (!BOOTSTRAP_TOKEN_PATTERN.test(token)) {
    throw new Error(
      `bootstrap token must be 6 lower-case letters or digits, '.', then 16 lower-case letters or digits (got ${token.length} characters, value not shown)`,
    );
  }
}

/** The worker bootstrap kubeconfig, field for field as k0s writes it. */
export function k0sJoinKubeconfig(input: K0sJoinTokenInput): string {
  assertBootstrapToken(input.token);
  if (!/^https:\/\/\S+$/.test(input.apiServer)) {
    throw new Error("apiServer must be an https:// URL such as https://203.0.113.10:6443");
  }
  const kubeconfig = {
    apiVersion: "v1",
    clusters: [
      {
        cluster: {
          "certificate-authority-data": Buffer.from(input.caCertificate, "utf8").toString("base64"),
          server: input.apiServer,
        },
        name: K0S_CONTEXT_NAME,
      },
    ],
    contexts: [{ context: { cluster: K0S_CONTEXT_NAME, user: K0S_WORKER_USER }, name: K0S_CONTEXT_NAME }],
    "current-context": K0S_CONTEXT_NAME,
    kind: "Config",
    preferences: {},
    users: [{ name: K0S_WORKER_USER, user: { token: input.token } }],
  };
  // clientcmd.Write emits block sequences at the parent's indentation and never folds long lines.
  return stringify(kubeconfig, { indentSeq: false, lineWidth: 0 });
}

/** The join token k0s accepts in `--token-file`: kubeconfig, gzip (best), base64 with padding. */
export function encodeK0sJoinToken(input: K0sJoinTokenInput): string {
  const kubeconfig = Buffer.from(k0sJoinKubeconfig(input), "utf8");
  return gzipSync(kubeconfig, { level: zlibConstants.Z_BEST_COMPRESSION }).toString("base64");
}

/** The kubeconfig inside a join token (k0s `pkg/token/joindecode.go`). */
export function decodeK0sJoinToken(token: string): string {
  const compact = token.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) {
    throw new Error("join token is not standard base64");
  }
  try {
    return gunzipSync(Buffer.from(compact, "base64")).toString("utf8");
  } catch {
    throw new Error("join token is not gzip-compressed data");
  }
}
