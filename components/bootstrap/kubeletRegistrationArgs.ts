/**
 * The node labels and taints a kubelet registers with, as flag values. k0s's `worker --labels` /
 * `--taints` and the kubelet's own `--node-labels` / `--register-with-taints` take the same forms,
 * so k0s and kubeadm workers render them here, once.
 */
import type { Taint } from "../fleet/fleetSpec";
import { partitionKubeletLabels } from "../fleet/kubeletLabels";

/** `k=v,...`; keys the kubelet refuses at registration are dropped (it would not start). "" when none are left. */
export function kubeletNodeLabelsArg(labels: Readonly<Record<string, string>>): string {
  return Object.entries(partitionKubeletLabels(labels).accepted)
    .map(([key, value]) => `${key}=${value}`)
    .join(",");
}

/** `key=value:Effect,...` (or `key:Effect` without a value); "" without taints. */
export function kubeletTaintsArg(taints: readonly Taint[]): string {
  return taints.map((t) => `${t.key}${t.value === undefined || t.value === "" ? "" : `=${t.value}`}:${t.effect}`).join(",");
}
