/**
 * Which of a cluster's Nodes are Ready: what the rollout of a static pool waits for before it
 * removes an old server (fleet/rolloutPlan.ts). Read through kubernetesApiClient.ts with the stack's
 * kubeconfig, limited to the cluster's own Nodes by their ownership label.
 */
import { kubeconfigCredentials, kubernetesApiRequest } from "./kubernetesApiClient";
import { OWNERSHIP_LABELS } from "../fleet/nodeMember";

interface NodeItem {
  metadata?: { name?: string };
  status?: { conditions?: Array<{ type?: string; status?: string }> };
}

/** Names of the Nodes in a Node list whose Ready condition is True. */
function readyNodeNamesIn(nodeList: unknown): Set<string> {
  const items = ((nodeList as { items?: unknown } | null)?.items ?? []) as NodeItem[];
  const ready = new Set<string>();
  for (const node of Array.isArray(items) ? items : []) {
    const name = node?.metadata?.name;
    if (name && (node.status?.conditions ?? []).some((c) => c.type === "Ready" && c.status === "True")) ready.add(name);
  }
  return ready;
}

/** The Ready Nodes labelled `nodefleet.io/cluster=<clusterId>`; errors name the cluster, never a credential. */
export async function readyClusterNodeNames(kubeconfig: string, clusterId: string): Promise<Set<string>> {
  const creds = kubeconfigCredentials(kubeconfig);
  const selector = encodeURIComponent(`${OWNERSHIP_LABELS.cluster}=${clusterId}`);
  return readyNodeNamesIn(
    await kubernetesApiRequest(creds, "GET", `/api/v1/nodes?labelSelector=${selector}`, `listing the Nodes of cluster ${clusterId}`),
  );
}
