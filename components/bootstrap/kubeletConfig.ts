/**
 * The KubeletConfiguration of self-joined kubeadm-cluster nodes, and its hash. The hash is the
 * trigger of the kubelet-config re-push on existing nodes, so it is computed from the rendered text
 * itself: it changes when, and only when, the file the node receives changes.
 */
import { stringify } from "yaml";
import { sha256Hex } from "../shared/canonicalJson";
import type { KubeletSettings } from "../fleet/fleetSpec";
import { kubeletReservationConfig } from "./kubeletReservations";
import { heredocDelimiter, shellQuote } from "./shellScript";
import { providerIdFromMetadata } from "./hcloudServerId";

/** Where the self-join puts the kubelet's files (the kubeadm layout, so operators find them). */
export const KUBELET_PATHS = {
  config: "/var/lib/kubelet/config.yaml",
  clientCA: "/var/lib/kubelet/ca.crt",
  bootstrapKubeconfig: "/etc/kubernetes/bootstrap-kubelet.conf",
  kubeconfig: "/etc/kubernetes/kubelet.conf",
  dropIn: "/etc/systemd/system/kubelet.service.d/10-nodefleet.conf",
} as const;

/** kubeadm's defaults; clusters with another service CIDR or domain set `kubelet.clusterDNS`/`clusterDomain`. */
const DEFAULT_CLUSTER_DNS = ["10.96.0.10"] as const;
const DEFAULT_CLUSTER_DOMAIN = "cluster.local";

/**
 * systemd-resolved's list of the real upstream servers. With resolved running, /etc/resolv.conf
 * names only its 127.0.0.53 stub, which a pod cannot reach (inside the pod it is the pod's own
 * loopback), and CoreDNS, which forwards to the node's resolv.conf, loops. kubeadm (and k0s) point
 * the kubelet here when systemd-resolved is active, and at /etc/resolv.conf otherwise.
 */
export const RESOLVED_UPSTREAM_RESOLV_CONF = "/run/systemd/resolve/resolv.conf";
const PLAIN_RESOLV_CONF = "/etc/resolv.conf";

export interface KubeletConfigInput {
  /** Reservations and max pods (through kubeletReservationConfig, the one source of node overhead). */
  readonly kubelet: KubeletSettings & { clusterDNS?: readonly string[]; clusterDomain?: string };
  /** `<scheme>:///<clusterId>/<nodeId>`, or HCLOUD_PROVIDER_ID_FROM_METADATA (left to the kubelet flag). */
  readonly providerID: string;
}

/**
 * KubeletConfiguration (kubelet.config.k8s.io/v1beta1). `authentication.x509.clientCAFile` lets the
 * apiserver's kubelet client certificate authenticate for logs/exec; `serverTLSBootstrap` stays
 * unset, so the kubelet serves a self-signed certificate instead of waiting on a serving CSR.
 */
export function renderKubeletConfig(input: KubeletConfigInput): string {
  const reservations = kubeletReservationConfig(input.kubelet);
  const config = {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: KUBELET_PATHS.clientCA },
    },
    authorization: { mode: "Webhook" },
    cgroupDriver: "systemd",
    clusterDNS: [...(input.kubelet.clusterDNS ?? DEFAULT_CLUSTER_DNS)],
    clusterDomain: input.kubelet.clusterDomain ?? DEFAULT_CLUSTER_DOMAIN,
    // Rendered for systemd-resolved (every Ubuntu image); writeKubeletConfigBlock adapts it per host.
    resolvConf: RESOLVED_UPSTREAM_RESOLV_CONF,
    containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock",
    // Read at boot (hcloudServerId.ts): the kubelet's --provider-id flag carries it instead.
    ...(providerIdFromMetadata(input.providerID) ? {} : { providerID: input.providerID }),
    rotateCertificates: true,
    maxPods: reservations.maxPods,
    kubeReserved: reservations.kubeReserved,
    evictionHard: reservations.evictionHard,
  };
  return stringify(config, { lineWidth: 0 });
}

/** sha256 (hex) of the rendered config: the re-push trigger. */
export function kubeletConfigHash(renderedConfig: string): string {
  return sha256Hex(renderedConfig);
}

/**
 * Bash (for scripts built on shellScript.ts's prelude) that writes the rendered config to
 * KUBELET_PATHS.config with `resolvConf` chosen on the host as kubeadm chooses it: systemd-resolved's
 * upstream list when the service is active, /etc/resolv.conf otherwise. Only that line can differ
 * from the rendered text, so the re-push hash still follows the rendered config.
 */
export function writeKubeletConfigBlock(renderedConfig: string): string {
  if (!/^resolvConf: .*$/m.test(renderedConfig))
    throw new Error("the kubelet config has no top-level resolvConf line to adapt to the host");
  const text = renderedConfig.endsWith("\n") ? renderedConfig : `${renderedConfig}\n`;
  const delimiter = heredocDelimiter(text, "NODEFLEET_KUBELET_CONFIG");
  return `# kubeadm's rule: with systemd-resolved the kubelet reads its upstream list, never the 127.0.0.53 stub
kubelet_resolv_conf=${shellQuote(PLAIN_RESOLV_CONF)}
if systemctl is-active --quiet systemd-resolved; then
  kubelet_resolv_conf=${shellQuote(RESOLVED_UPSTREAM_RESOLV_CONF)}
fi
write_file ${shellQuote(KUBELET_PATHS.config)} 0644 < <(sed -e "s|^resolvConf: .*$|resolvConf: \${kubelet_resolv_conf}|" <<'${delimiter}'
${text}${delimiter}
)`;
}
