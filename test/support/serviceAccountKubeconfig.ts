/**
 * A kubeconfig that authenticates as a ServiceAccount, for running a controller outside the cluster
 * under that ServiceAccount's RBAC only (as its pod would): the token comes from the TokenRequest
 * API (`POST .../serviceaccounts/<name>/token`, what the kubelet asks for a projected token), with
 * the API server's default audience, and is written only to the file (mode 0600), never to argv or logs.
 */
import { writeFileSync } from "node:fs";
import { stringify } from "yaml";
import { type KubeIdentity, kube } from "../../automation/local/kubeClient";

export interface ServiceAccountKubeconfigArgs {
  /** An identity allowed to create tokens for the ServiceAccount (the admin's). */
  readonly admin: KubeIdentity;
  readonly namespace: string;
  readonly serviceAccount: string;
  /** Where the kubeconfig is written. */
  readonly file: string;
  /** How long the token is valid. Default 2 hours, past any test that uses it. */
  readonly expirationSeconds?: number;
}

/** Writes the kubeconfig to `args.file` and returns the identity it holds, for direct calls as the ServiceAccount. */
export async function writeServiceAccountKubeconfig(args: ServiceAccountKubeconfigArgs): Promise<KubeIdentity> {
  const answer = (await kube(args.admin, "POST", `/api/v1/namespaces/${args.namespace}/serviceaccounts/${args.serviceAccount}/token`, {
    apiVersion: "authentication.k8s.io/v1",
    kind: "TokenRequest",
    spec: { expirationSeconds: args.expirationSeconds ?? 7200 },
  })) as { status: { token: string } };
  const token = answer.status.token;
  const user = `system:serviceaccount:${args.namespace}:${args.serviceAccount}`;
  writeFileSync(
    args.file,
    stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "local",
          cluster: { server: args.admin.server, "certificate-authority-data": Buffer.from(args.admin.caPem).toString("base64") },
        },
      ],
      users: [{ name: user, user: { token } }],
      contexts: [{ name: "local", context: { cluster: "local", user, namespace: args.namespace } }],
      "current-context": "local",
    }),
    { mode: 0o600 },
  );
  return { server: args.admin.server, caPem: args.admin.caPem, token };
}
