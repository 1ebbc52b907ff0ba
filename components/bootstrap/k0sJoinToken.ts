/**
 * k0s worker join tokens, built offline from a bootstrap token: a kubeconfig in the shape k0s's
 * `pkg/token.GenerateKubeconfig` writes (client-go `clientcmd.Write`), gzip at best compression,
 * then standard base64 with padding (`pkg/token/joinencode.go`).
 */
import { gunzipSync, gzipSync, constants as zlibConstants } from "node:zlib";
import { stringify } from "yaml";
import { type BootstrapKubeconfigInput, assertBootstrapKubeconfigInput, bootstrapKubeconfigCluster } from "./bootstrapKubeconfigInput";

/** k0s names cluster and context `k0s`; workers reject join tokens for any user but this one. */
const K0S_CONTEXT_NAME = "k0s";
const K0S_WORKER_USER = "kubelet-bootstrap";

/** The worker bootstrap kubeconfig, field for field as k0s writes it. */
export function k0sJoinKubeconfig(input: BootstrapKubeconfigInput): string {
  assertBootstrapKubeconfigInput(input);
  const kubeconfig = {
    apiVersion: "v1",
    clusters: [
      {
        cluster: bootstrapKubeconfigCluster(input),
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
export function encodeK0sJoinToken(input: BootstrapKubeconfigInput): string {
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
