/**
 * Which node labels the kubelet accepts at registration (`--node-labels`).
 *
 * Keys in the kubernetes.io / k8s.io namespaces are restricted: the kubelet refuses to start on any
 * of them except the allow-list below (NodeRestriction, KEP-279). Every other prefix is fine.
 */
const ALLOWED_EXACT = new Set([
  "kubernetes.io/hostname",
  "kubernetes.io/os",
  "kubernetes.io/arch",
  "beta.kubernetes.io/os",
  "beta.kubernetes.io/arch",
  "beta.kubernetes.io/instance-type",
  "node.kubernetes.io/instance-type",
  "topology.kubernetes.io/zone",
  "topology.kubernetes.io/region",
  "failure-domain.beta.kubernetes.io/zone",
  "failure-domain.beta.kubernetes.io/region",
]);

const ALLOWED_NAMESPACES = ["kubelet.kubernetes.io", "node.kubernetes.io"];

function labelPrefix(key: string): string | undefined {
  const slash = key.indexOf("/");
  return slash < 0 ? undefined : key.slice(0, slash);
}

function inNamespace(prefix: string, namespace: string): boolean {
  return prefix === namespace || prefix.endsWith(`.${namespace}`);
}

/** True when the kubelet would refuse this label key in `--node-labels`. */
export function isKubeletRestrictedLabel(key: string): boolean {
  const prefix = labelPrefix(key);
  if (prefix === undefined) return false;
  if (!inNamespace(prefix, "kubernetes.io") && !inNamespace(prefix, "k8s.io")) return false;
  if (ALLOWED_EXACT.has(key)) return false;
  return !ALLOWED_NAMESPACES.some((ns) => inNamespace(prefix, ns));
}

/** Splits labels into those the kubelet may set at registration and those it would refuse. */
export function partitionKubeletLabels(labels: Readonly<Record<string, string>>): {
  accepted: Record<string, string>;
  restricted: Record<string, string>;
} {
  const accepted: Record<string, string> = {};
  const restricted: Record<string, string> = {};
  for (const [key, value] of Object.entries(labels)) {
    (isKubeletRestrictedLabel(key) ? restricted : accepted)[key] = value;
  }
  return { accepted, restricted };
}
