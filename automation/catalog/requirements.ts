/**
 * Kubernetes node selector requirements (`[{key, operator, values}]`, as in a NodeClaim) evaluated
 * against the labels an offering would give its node. Keys an offering does not define (custom
 * NodePool labels such as `example.com/team`) do not constrain the choice: Karpenter applies those
 * labels to the node itself.
 */

export const REQUIREMENT_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"] as const;
export type RequirementOperator = (typeof REQUIREMENT_OPERATORS)[number];

export interface Requirement {
  readonly key: string;
  readonly operator: RequirementOperator;
  readonly values?: readonly string[];
}

/** The well-known labels an offering defines. */
export function offeringLabels(o: {
  instanceType: string;
  zone: string;
  arch: string;
  pool: string;
  cpu: number;
  memoryMiB: number;
}): Record<string, string> {
  return {
    "node.kubernetes.io/instance-type": o.instanceType,
    "topology.kubernetes.io/zone": o.zone,
    "kubernetes.io/arch": o.arch,
    "kubernetes.io/os": "linux",
    "karpenter.sh/capacity-type": "on-demand",
    "nodefleet.io/pool": o.pool,
    "nodefleet.io/instance-cpu": String(o.cpu),
    "nodefleet.io/instance-memory": String(o.memoryMiB),
  };
}

export function requirementAllows(requirement: Requirement, labels: Readonly<Record<string, string>>): boolean {
  if (!(requirement.key in labels)) return true;
  const value = labels[requirement.key]!;
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case "In":
      return values.includes(value);
    case "NotIn":
      return !values.includes(value);
    case "Exists":
      return true;
    case "DoesNotExist":
      return false;
    case "Gt":
      return values.length > 0 && Number(value) > Number(values[0]);
    case "Lt":
      return values.length > 0 && Number(value) < Number(values[0]);
  }
}

export function requirementsAllow(requirements: readonly Requirement[], labels: Readonly<Record<string, string>>): boolean {
  return requirements.every((r) => requirementAllows(r, labels));
}
