/**
 * The cluster's Nodes as the service reads them for their capacity (nodeCapacityWatch.ts): with
 * the kubeconfig the programs use (the stack's `cluster.kubeconfig`, decrypted, or the file KUBECONFIG
 * names with `cluster.kubeconfigFromEnvironment`), limited to the cluster's ownership label.
 */
import { readFileSync } from "node:fs";
import { parseFleetSpec } from "../../components/fleet/fleetSpec";
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
  if (!cluster.kubeconfigFromEnvironment) return cluster.kubeconfig;
  const file = env.KUBECONFIG;
  // As the programs read it (stacks/clusterKubeconfig.ts): one file, not a list.
  if (!file || file.includes(":")) return undefined;
  return readFileSync(file, "utf8");
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
