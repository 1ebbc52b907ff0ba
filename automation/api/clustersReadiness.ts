/**
 * readyz of a service with several clusters: each cluster's own answer in the details, under its
 * stack's name. The service stays ready (200) while any cluster serves, so that one cluster's
 * broken stack never takes the others out of their load balancer; it is starting (503) only while
 * none serves yet and some still start.
 */
import type { Readiness } from "./routes/probeRoutes";
import type { ClusterState } from "./serviceMetrics";

/** A cluster as the front sees it: being started, serving (its own readiness), failed, or being stopped. */
export interface ClusterStatus {
  readonly stack: string;
  /** The cluster its stack file declares, when the file could be read. */
  readonly clusterId?: string;
  readonly phase: "starting" | "serving" | "failed" | "stopping";
  /** Why it failed. */
  readonly error?: string;
  /** Its own readiness, while serving. */
  readonly readiness?: () => Readiness;
}

interface ClusterReadiness {
  readonly cluster?: string;
  readonly status: ClusterState["state"];
  readonly details?: Record<string, unknown>;
}

function readinessOfCluster(cluster: ClusterStatus): ClusterReadiness {
  const id = cluster.clusterId !== undefined ? { cluster: cluster.clusterId } : {};
  if (cluster.phase === "failed") return { ...id, status: "failed", details: { error: cluster.error ?? "its stack did not start" } };
  if (cluster.phase !== "serving" || !cluster.readiness) return { ...id, status: cluster.phase === "stopping" ? "stopping" : "starting" };
  const own = cluster.readiness();
  return { ...id, status: own.status, ...(own.details ? { details: own.details } : {}) };
}

/** The front's readyz: stopping while it closes; else starting, ready or degraded from its clusters', each named. */
export function clustersReadiness(clusters: readonly ClusterStatus[], closing: boolean): Readiness {
  if (closing) return { status: "stopping", details: { reason: "the service is shutting down" } };
  const each = Object.fromEntries(clusters.map((cluster) => [cluster.stack, readinessOfCluster(cluster)]));
  const statuses = Object.values(each).map((cluster) => cluster.status);
  if (statuses.length === 0) return { status: "degraded", details: { clusters: each, reason: "no stack file matches --stack" } };
  if (statuses.every((status) => status === "starting")) return { status: "starting", details: { clusters: each } };
  return { status: statuses.every((status) => status === "ready") ? "ready" : "degraded", details: { clusters: each } };
}

/** The clusters' states for the metrics, labelled by cluster id (the stack's name when its file could not be read). */
export function clusterStates(clusters: readonly ClusterStatus[]): ClusterState[] {
  return clusters.map((cluster) => ({ cluster: cluster.clusterId ?? cluster.stack, state: readinessOfCluster(cluster).status }));
}
