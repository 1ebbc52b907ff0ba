/**
 * The kubelet's heartbeat since Kubernetes 1.17: a Lease named after the Node in kube-node-lease,
 * renewed every quarter of its duration (10 s of 40 s by default), which the node lifecycle
 * controller reads to keep the Node healthy; the Node's status itself is written only when it
 * changes or every few minutes. Renewing a small Lease costs the control plane far less than
 * rewriting a Node's status, which is what lets the local cloud carry a thousand machines.
 * Done with the node's own identity, so the Node authorizer and NodeRestriction apply.
 */
import { KubeApiError, type KubeIdentity, kube } from "./kubeClient";

/** The kubelet's default `nodeLeaseDurationSeconds`. */
const LEASE_DURATION_SECONDS = 40;

const leasePath = (nodeName: string) => `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`;

/** A MicroTime as the API server parses it: RFC 3339 with six fractional digits. */
function microTime(at: Date): string {
  return at.toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/**
 * Renews the node's Lease, creating it (owned by its Node, as the kubelet does, so the Lease goes
 * with the Node) when it does not exist. Resolves "gone" when the Node itself is gone: no Lease is
 * made for a Node that nodefleet removed.
 */
export async function renewNodeLease(node: KubeIdentity, nodeName: string, at = new Date()): Promise<"renewed" | "created" | "gone"> {
  const renewTime = microTime(at);
  try {
    await kube(node, "PATCH", leasePath(nodeName), { spec: { holderIdentity: nodeName, renewTime } });
    return "renewed";
  } catch (error) {
    if (!(error instanceof KubeApiError && error.status === 404)) throw error;
  }
  let uid: string;
  try {
    uid = ((await kube(node, "GET", `/api/v1/nodes/${nodeName}`)) as { metadata: { uid: string } }).metadata.uid;
  } catch (error) {
    if (error instanceof KubeApiError && error.status === 404) return "gone";
    throw error;
  }
  try {
    await kube(node, "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        name: nodeName,
        namespace: "kube-node-lease",
        ownerReferences: [{ apiVersion: "v1", kind: "Node", name: nodeName, uid }],
      },
      spec: { holderIdentity: nodeName, leaseDurationSeconds: LEASE_DURATION_SECONDS, renewTime },
    });
  } catch (error) {
    // Created meanwhile by an earlier renewal still in flight: it is there.
    if (!(error instanceof KubeApiError && error.status === 409)) throw error;
  }
  return "created";
}
