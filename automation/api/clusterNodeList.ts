/**
 * The cluster's Nodes as the service reads them for their capacity (nodeCapacityWatch.ts): with
 * the kubeconfig the programs use (the stack's `cluster.kubeconfig`, decrypted, or the file KUBECONFIG
 * names with `cluster.kubeconfigFromEnvironment`), limited to the cluster's ownership label.
 */
import { clusterKubeconfig } from "../../components/fleet/clusterKubeconfig";
import { FleetSpecError, parseFleetSpec } from "../../components/fleet/fleetSpec";
import { OWNERSHIP_LABELS } from "../../components/fleet/nodeMember";
import { kubeconfigCredentials, kubernetesApiRequest } from "../../components/kubernetes/kubernetesApiClient";
import type { StackConfigValue } from "../engine/stackEngine";
import { configValues } from "../stackConfigFile";

/** The kubeconfig of the served stack's config, or undefined when it names none (no Nodes are read then). */
export function serviceKubeconfig(
  config: Readonly<Record<string, StackConfigValue>>,
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const { cluster } = parseFleetSpec(configValues(config));
  try {
    return clusterKubeconfig(cluster, { env, optional: true });
  } catch (error) {
    // A KUBECONFIG the programs would refuse (a list, an unreadable file): no Nodes are read.
    if (error instanceof FleetSpecError) return undefined;
    throw error;
  }
}

/** `GET /api/v1/nodes` with the cluster's label selector; undefined without a kubeconfig. */
export async function clusterNodeList(config: Readonly<Record<string, StackConfigValue>>, clusterId: string): Promise<unknown> {
  const kubeconfig = serviceKubeconfig(config);
  if (kubeconfig === undefined) return undefined;
  const selector = encodeURIComponent(`${OWNERSHIP_LABELS.cluster}=${clusterId}`);
  return kubernetesApiRequest(
    kubeconfigCredentials(kubeconfig),
    "GET",
    `/api/v1/nodes?labelSelector=${selector}`,
    `listing the Nodes of cluster ${clusterId}`,
  );
}
