/**
 * The minimal kubelet-config re-push for existing kubeadm-cluster nodes: rewrite the kubelet config
 * and CA, restart the kubelet only when either changed. containerd, packages, mounts and running
 * pods are left alone, so a kubelet-config change converges without replacing the node. The
 * restart is not harmless (the kubelet re-admits its pods against the new config, and not every
 * setting is safe to change on a live node), so the Elastic Metal pool paces it through its
 * rollout, draining the node first (scaleway/elasticMetalNodePool.ts).
 */
import { KUBELET_PATHS, writeKubeletConfigBlock } from "./kubeletConfig";
import { scriptPrelude, writeFileBlock } from "./shellScript";

export interface KubeletConfigRepushInput {
  readonly hostname: string;
  readonly caCertificate: string;
  /** The rendered KubeletConfiguration (kubeletConfig.ts). */
  readonly kubeletConfig: string;
}

export function renderKubeletConfigRepush(input: KubeletConfigRepushInput): string {
  return `${scriptPrelude(`re-push the kubelet config of ${input.hostname}`)}
${writeFileBlock(KUBELET_PATHS.clientCA, "0644", input.caCertificate)}
${writeKubeletConfigBlock(input.kubeletConfig)}
if ! systemctl cat kubelet >/dev/null 2>&1; then
  # Not joined yet (cloud-init still running): the join starts the kubelet with these files.
  log "kubelet not installed yet; files written, no restart"
elif [ "$CHANGED" -gt 0 ]; then
  systemctl restart kubelet
  log "kubelet config updated; kubelet restarted"
else
  log "kubelet config unchanged"
fi
`;
}
