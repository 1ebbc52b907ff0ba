/**
 * Taints as Kubernetes identifies them: by (key, effect). A Node whose taints repeat a pair fails
 * validation, so lists are merged by that pair (the later list's value winning) and a list that
 * repeats one is refused where it enters.
 */

/** What identifies a taint (fleetSpec.ts `Taint` has these and its value). */
export interface TaintIdentity {
  readonly key: string;
  readonly effect: string;
}

export function taintPair(taint: TaintIdentity): string {
  return `${taint.key}:${taint.effect}`;
}

/** `base` with each of `overrides` replacing the entry of the same (key, effect) in place, or appended. */
export function mergeTaints<T extends TaintIdentity>(base: readonly T[], overrides: readonly T[]): T[] {
  const merged = new Map<string, T>();
  for (const taint of [...base, ...overrides]) merged.set(taintPair(taint), taint);
  return [...merged.values()];
}

/** Indexes of the entries repeating the (key, effect) of an earlier one. */
export function repeatedTaintPairs(taints: readonly TaintIdentity[]): number[] {
  const seen = new Set<string>();
  const repeats: number[] = [];
  taints.forEach((taint, index) => {
    const pair = taintPair(taint);
    if (seen.has(pair)) repeats.push(index);
    seen.add(pair);
  });
  return repeats;
}
