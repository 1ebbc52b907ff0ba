/** A minimal kubeconfig that authenticates with a bearer token, for tests of the removal resources. */
export function tokenKubeconfig(token: string, server = "https://203.0.113.10:6443"): string {
  return [
    "apiVersion: v1",
    "kind: Config",
    `clusters: [{name: c, cluster: {server: '${server}'}}]`,
    "contexts: [{name: c, context: {cluster: c, user: u}}]",
    "current-context: c",
    `users: [{name: u, user: {token: ${token}}}]`,
    "",
  ].join("\n");
}
