/**
 * The KubeletConfiguration of self-joined kubeadm-cluster nodes, and its hash. The hash is the
 * trigger of the kubelet-config re-push on existing nodes, so it is computed from the rendered text
 * itself: it changes when, and only when, the file the node receives changes.
 */
import { stringify } from "yaml";
import { sha256Hex } from "../shared/canonicalJson";
import type { KubeletSettings } from "../fleet/fleetSpec";
import { kubeletReservationConfig } from "./kubeletReservations";

/** Where the self-join puts the kubelet's files (the kubeadm layout, so operators find them). */
export const KUBELET_PATHS = {
  config: "/var/lib/kubelet/config.yaml",
  clientCA: "/var/lib/kubelet/ca.crt",
  bootstrapKubeconfig: "/etc/kubernetes/bootstrap-kubelet.conf",
  kubeconfig: "/etc/kubernetes/kubelet.conf",
  dropIn: "/etc/systemd/system/kubelet.service.d/10-nodefleet.conf",
} as const;

/** kubeadm's defaults; clusters with another service CIDR or domain set `kubelet.clusterDNS`/`clusterDomain`. */
export const DEFAULT_CLUSTER_DNS = ["10.96.0.10"] as const;
export const DEFAULT_CLUSTER_DOMAIN = "cluster.local";

export interface KubeletConfigInput {
  /** Reservations and max pods (through kubeletReservationConfig, the one source of node overhead). */
  readonly kubelet: KubeletSettings & { clusterDNS?: readonly string[]; clusterDomain?: string };
  /** `<scheme>:///<clusterId>/<nodeId>`. */
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
    containerRuntimeEndpoint: "unix:///run/containerd/containerd.sock",
    providerID: input.providerID,
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
