/**
 * What the local cloud's kubelets do with the pods bound to their Node, as kwok does: a pod the
 * scheduler bound starts Running and Ready at once (no containers run), and a pod being deleted
 * (evicted by a drain, or deleted by its owner) is confirmed gone, which a real kubelet does once
 * its containers stop. Each call uses the node's own identity, so NodeRestriction applies.
 */
import { type KubeIdentity, KubeApiError, kube } from "./kubeClient";

export interface BoundPod {
  metadata: { name: string; namespace: string; uid: string; deletionTimestamp?: string };
  spec: { nodeName?: string; containers: Array<{ name: string; image: string }> };
  status: { phase?: string };
}

/** Whether the kubelet has something to do with the pod: start it, or confirm its deletion. */
export function podNeedsKubelet(pod: BoundPod): boolean {
  return pod.metadata.deletionTimestamp !== undefined || pod.status.phase === "Pending" || pod.status.phase === undefined;
}

/** One kubelet pass over the node's pods; returns how many it started and how many it finished deleting. */
export async function syncNodePods(node: KubeIdentity, nodeName: string): Promise<{ started: number; deleted: number }> {
  const selector = encodeURIComponent(`spec.nodeName=${nodeName}`);
  const pods = ((await kube(node, "GET", `/api/v1/pods?fieldSelector=${selector}`)) as { items: BoundPod[] }).items;
  return syncPods(node, pods);
}

/** The kubelet's work on pods bound to its node, listed by whoever listed them (the agent lists all nodes' at once). */
export async function syncPods(node: KubeIdentity, pods: readonly BoundPod[]): Promise<{ started: number; deleted: number }> {
  let started = 0;
  let deleted = 0;
  const now = new Date().toISOString();
  for (const pod of pods) {
    const path = `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`;
    try {
      if (pod.metadata.deletionTimestamp) {
        // The kubelet's final delete: grace 0, preconditioned on the uid so a new pod of the same name survives.
        await kube(node, "DELETE", path, {
          kind: "DeleteOptions",
          apiVersion: "v1",
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        });
        deleted++;
      } else if (pod.status.phase === "Pending" || pod.status.phase === undefined) {
        const ready = ["Initialized", "PodReadyToStartContainers", "ContainersReady", "Ready", "PodScheduled"].map((type) => ({
          type,
          status: "True",
          lastTransitionTime: now,
        }));
        await kube(
          node,
          "PATCH",
          `${path}/status`,
          {
            status: {
              phase: "Running",
              startTime: now,
              conditions: ready,
              containerStatuses: pod.spec.containers.map((c) => ({
                name: c.name,
                image: c.image,
                imageID: "",
                ready: true,
                started: true,
                restartCount: 0,
                state: { running: { startedAt: now } },
              })),
            },
          },
          "application/strategic-merge-patch+json",
        );
        started++;
      }
    } catch (error) {
      // Gone or changed meanwhile: the next pass sees the new state.
      if (!(error instanceof KubeApiError && (error.status === 404 || error.status === 409))) throw error;
    }
  }
  return { started, deleted };
}
