/**
 * Label keys that neither a create request of the scaling API nor a pool of the fleet spec may set
 * on a Node: keys the kubelet would refuse, `kubernetes.io/hostname` (a create with
 * `kubernetes.io/hostname: evil` joined a Node under that name) and `nodefleet.io/` (nodefleet's
 * own). A create request may also carry Karpenter's exceptions (`node-restriction.kubernetes.io/`,
 * `kops.k8s.io/`), which Karpenter sets on the Node; a pool may not. Pure: the API's request schema
 * and the fleet spec both ask `reservedLabelRule`, so the two cannot drift apart. The rules and
 * their sources: components/fleet/README.md (Reserved label keys).
 */
import { isKubeletRestrictedLabel } from "./kubeletLabels";

export type ReservedLabelRuleName = "kubernetes" | "hostname" | "nodefleet";

export interface ReservedLabelRule {
  readonly rule: ReservedLabelRuleName;
  /** Names the key and the rule, for a 400 or a fleet spec problem. */
  readonly message: string;
}

const HOSTNAME = "kubernetes.io/hostname";
const NODEFLEET_PREFIX = "nodefleet.io/";
const KARPENTER_APPLIED_DOMAINS = ["node-restriction.kubernetes.io", "kops.k8s.io"];

/**
 * Who puts the labels on the Node besides the kubelet: `kubelet` alone (a fleet spec pool), or
 * `karpenter` too (a create request of the scaling API, from a NodeClaim).
 */
export type LabelApplier = "kubelet" | "karpenter";

function karpenterApplied(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return KARPENTER_APPLIED_DOMAINS.some((d) => domain === d || domain.endsWith(`.${d}`));
}

/** The rule `key` breaks, or undefined when a request or a pool may set it. Safe on any string. */
export function reservedLabelRule(key: string, applier: LabelApplier = "kubelet"): ReservedLabelRule | undefined {
  if (applier === "karpenter" && karpenterApplied(key)) return undefined;
  if (key === HOSTNAME) {
    return {
      rule: "hostname",
      message: `label ${key} is reserved: the kubelet sets it to the node's own name, and Karpenter refuses it (RestrictedLabels)`,
    };
  }
  if (isKubeletRestrictedLabel(key)) {
    return {
      rule: "kubernetes",
      message:
        `label ${key} is reserved: the kubernetes.io and k8s.io namespaces belong to Kubernetes and the kubelet refuses them (NodeRestriction), ` +
        "except its well-known labels and the node.kubernetes.io/ and kubelet.kubernetes.io/ namespaces" +
        (applier === "karpenter" ? " (and, set by Karpenter, node-restriction.kubernetes.io/ and kops.k8s.io/)" : "") +
        "; use one of those or a prefix of your own",
    };
  }
  if (key.startsWith(NODEFLEET_PREFIX)) {
    return { rule: "nodefleet", message: `label ${key} is reserved: nodefleet.io/ labels are set by nodefleet itself` };
  }
  return undefined;
}

/** Every reserved key of `labels` with the rule it breaks, in the labels' order. */
export function reservedLabels(
  labels: Readonly<Record<string, string>>,
  applier: LabelApplier = "kubelet",
): Array<{ key: string } & ReservedLabelRule> {
  return Object.keys(labels).flatMap((key) => {
    const broken = reservedLabelRule(key, applier);
    return broken ? [{ key, ...broken }] : [];
  });
}
