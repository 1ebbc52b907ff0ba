/** The ClusterService a route's `clusterId` names (the auth hook has already matched it to the token). */
import { ApiError } from "../apiError";
import type { ClusterService } from "../clusterService";

export type ClusterServices = ReadonlyMap<string, ClusterService>;

export function clusterService(clusters: ClusterServices, clusterId: string): ClusterService {
  const service = clusters.get(clusterId);
  if (!service) throw new ApiError("ClusterNotFound", `this service does not serve cluster ${clusterId}`);
  return service;
}
