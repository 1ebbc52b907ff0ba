/**
 * Label keys that neither a create request of the scaling API nor a pool of the fleet spec may set
 * on a Node: the label would either be refused by the kubelet, claim an identity that is not the
 * node's (a create with `kubernetes.io/hostname: evil` joined a Node under that name), or forge a
 * label nodefleet itself owns. Pure: the API's request schema and the fleet spec's pool labels
 * both ask `reservedLabelRule`, so the two cannot drift apart.
 *
 * The rules, restated from their sources (nothing copied):
 * - `kubernetes` — the `kubernetes.io` and `k8s.io` namespaces, subdomains included, belong to
 *   Kubernetes. Under the NodeRestriction admission plugin (KEP-279) a kubelet may set on its own
 *   Node only the well-known labels and namespaces that k8s.io/kubelet lists as `KubeletLabels`
 *   and `KubeletLabelNamespaces` (pkg/apis/well_known_labels.go): hostname, os and arch (GA and
 *   beta), instance type (GA and beta), topology and failure-domain zone and region, and keys under
 *   `[*.]kubelet.kubernetes.io/` and `[*.]node.kubernetes.io/`. kubeletLabels.ts holds that list;
 *   any other key in these namespaces is reserved, `node-restriction.kubernetes.io/` and
 *   `node-role.kubernetes.io/` among them.
 * - `hostname` — `kubernetes.io/hostname`, although the kubelet may set it, is the kubelet's own
 *   (the node's name): Karpenter v1 lists it as its only `RestrictedLabels` entry
 *   (sigs.k8s.io/karpenter pkg/apis/v1/labels.go) and refuses it in NodePool templates, so it
 *   never reaches a NodeClaim and no request may carry it. Karpenter's other `WellKnownLabels` in
 *   these namespaces (zone, region, instance type, arch, os) are ones the kubelet may set.
 * - `nodefleet` — keys with the prefix `nodefleet.io/` are nodefleet's own (the cluster, pool and
 *   node of a member, the offering labels of catalog/requirements.ts). Only the domain itself:
 *   Karpenter labels a NodeClaim with its NodeClass as `karpenter.nodefleet.io/nodefleetnodeclass`.
 *
 * A create request's labels come from a Karpenter NodeClaim, and Karpenter itself puts on the Node
 * the ones the kubelet may not set (kubeletLabels.ts keeps them out of `--node-labels`). So a
 * request may also carry Karpenter's exceptions to the Kubernetes namespaces, `[*.]node-restriction
 * .kubernetes.io/` and `[*.]kops.k8s.io/` (its NodePool label rules, hack/validation/labels.sh of
 * sigs.k8s.io/karpenter): node-restriction labels are how Karpenter users isolate workloads, and
 * NodeRestriction's point is that a node cannot set them on itself, which still holds. A pool of
 * the fleet spec has only the kubelet to label its Nodes at registration, so the kubelet's rule.
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
export function reservedLabels(labels: Readonly<Record<string, string>>, applier: LabelApplier = "kubelet"): Array<{ key: string } & ReservedLabelRule> {
  return Object.keys(labels).flatMap((key) => {
    const broken = reservedLabelRule(key, applier);
    return broken ? [{ key, ...broken }] : [];
  });
}
