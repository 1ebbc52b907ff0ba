/**
 * Taints as Kubernetes identifies them: by (key, effect). A Node whose taints repeat a pair fails
 * validation, so lists are merged by that pair (the later list's value winning) and a list that
 * repeats one is refused where it enters.
 */
import type { Taint } from "./fleetSpec";

export function taintPair(taint: Pick<Taint, "key" | "effect">): string {
  return `${taint.key}:${taint.effect}`;
}

/** `base` with each of `overrides` replacing the entry of the same (key, effect) in place, or appended. */
export function mergeTaints(base: readonly Taint[], overrides: readonly Taint[]): Taint[] {
  const merged = new Map<string, Taint>();
  for (const taint of [...base, ...overrides]) merged.set(taintPair(taint), taint);
  return [...merged.values()];
}

/** Indexes of the entries repeating the (key, effect) of an earlier one. */
export function repeatedTaintPairs(taints: readonly Taint[]): number[] {
  const seen = new Set<string>();
  const repeats: number[] = [];
  taints.forEach((taint, index) => {
    const pair = taintPair(taint);
    if (seen.has(pair)) repeats.push(index);
    seen.add(pair);
  });
  return repeats;
}
