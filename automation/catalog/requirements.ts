/**
 * Kubernetes node selector requirements (`[{key, operator, values}]`, as in a NodeClaim) evaluated
 * against the labels an offering would give its node. Keys an offering does not define (custom
 * NodePool labels such as `example.com/team`) do not constrain the choice: Karpenter applies those
 * labels to the node itself.
 */

/** Kubernetes' node selector operators plus Karpenter's Gte and Lte (it writes `Gt N` as `Gte N+1` since v1.9). */
export const REQUIREMENT_OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"] as const;
export type RequirementOperator = (typeof REQUIREMENT_OPERATORS)[number];
/** The operators comparing a label as an integer with exactly one integer value. */
export const NUMERIC_OPERATORS: readonly RequirementOperator[] = ["Gt", "Lt", "Gte", "Lte"];

export interface Requirement {
  readonly key: string;
  readonly operator: RequirementOperator;
  readonly values?: readonly string[];
  /** Karpenter's flexibility floor: the offerings left must show at least this many distinct values of the key. */
  readonly minValues?: number;
}

/** The well-known labels an offering defines. */
export function offeringLabels(o: {
  instanceType: string;
  zone: string;
  region: string;
  arch: string;
  pool: string;
  cpu: number;
  memoryMiB: number;
}): Record<string, string> {
  return {
    "node.kubernetes.io/instance-type": o.instanceType,
    "topology.kubernetes.io/zone": o.zone,
    "topology.kubernetes.io/region": o.region,
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
    case "Gte":
      return values.length > 0 && Number(value) >= Number(values[0]);
    case "Lte":
      return values.length > 0 && Number(value) <= Number(values[0]);
  }
}

export function requirementsAllow(requirements: readonly Requirement[], labels: Readonly<Record<string, string>>): boolean {
  return requirements.every((r) => requirementAllows(r, labels));
}

/**
 * The requirements whose minValues the offerings' labels do not reach: fewer distinct values of
 * the key than asked for. Keys no offering defines do not count (as above, they do not constrain).
 */
export function unmetMinValues(
  requirements: readonly Requirement[],
  offerings: ReadonlyArray<Readonly<Record<string, string>>>,
): Array<{ key: string; minValues: number; found: number }> {
  return requirements.flatMap((r) => {
    if (r.minValues === undefined || !offerings.some((labels) => r.key in labels)) return [];
    const found = new Set(offerings.map((labels) => labels[r.key]).filter((v) => v !== undefined)).size;
    return found < r.minValues ? [{ key: r.key, minValues: r.minValues, found }] : [];
  });
}
