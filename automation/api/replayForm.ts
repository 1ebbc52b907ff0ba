/**
 * When a create repeats an earlier one. Karpenter retries Create with the same NodeClaim, but not
 * byte for byte: requirements come from a map (any order), and labels are mutable (hydration adds
 * the NodeClass label after the first Create). So a replay is recognised on a canonical form:
 * requirements with their values as sets, taints as a set, and labels compared as "the first
 * create's labels are all still there, unchanged".
 */
import { canonicalHash, canonicalJson } from "../../components/shared/canonicalJson";
import type { CreateNodeBody } from "./schemas";

const byCanonicalJson = <T>(items: readonly T[]): T[] =>
  [...new Map(items.map((item) => [canonicalJson(item), item])).entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, item]) => item);

/** The body without its labels, with requirements, their values and taints sorted and deduplicated (empty lists left out). */
function canonicalCreate(body: CreateNodeBody): Omit<CreateNodeBody, "labels"> {
  const { labels: _labels, requirements, taints, ...rest } = body;
  return {
    ...rest,
    ...(requirements !== undefined && requirements.length > 0
      ? {
          requirements: byCanonicalJson(
            requirements.map((r) => (r.values !== undefined ? { ...r, values: [...new Set(r.values)].sort() } : r)),
          ),
        }
      : {}),
    ...(taints !== undefined && taints.length > 0 ? { taints: byCanonicalJson(taints) } : {}),
  };
}

/** The fingerprint stored with a claim: equal for bodies that differ only in order or in labels. */
export function createRequestHash(body: CreateNodeBody): string {
  return canonicalHash(canonicalCreate(body));
}

/** `again` asks for what `first` asked for: the same canonical form, and every label of `first` with its value. */
export function isReplayOf(first: CreateNodeBody, again: CreateNodeBody): boolean {
  if (canonicalJson(canonicalCreate(first)) !== canonicalJson(canonicalCreate(again))) return false;
  const labels = again.labels ?? {};
  return Object.entries(first.labels ?? {}).every(([key, value]) => labels[key] === value);
}
