/**
 * "Did you mean ...?" for a mistyped name: the closest of the names that exist, by edit distance.
 * A typo such as `nodefleet:pool` is otherwise silently ignored (the setting it was meant to be
 * keeps its default), so the hint turns a refusal into a one-character fix.
 */

/** Levenshtein distance: the fewest single-character insertions, deletions and substitutions from `a` to `b`. */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  // One row of the dynamic-programming table at a time: names are short, but keys come from users.
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * How different two names may be and still be offered as a correction: 40% of the longer one's
 * characters (at least one), so `pool` -> `pools` and `netwrok` -> `network` are suggested but
 * `foo` -> `pools` is not (a far-fetched suggestion misleads more than none).
 */
function isCloseEnough(name: string, candidate: string, distance: number): boolean {
  return distance <= Math.max(1, Math.floor(0.4 * Math.max(name.length, candidate.length)));
}

/**
 * The candidate nearest to `name` (ignoring case, which a typo often gets wrong), or undefined when
 * none is close enough. Ties go to the earlier candidate, so callers list their names by importance.
 */
export function nearestName(name: string, candidates: readonly string[]): string | undefined {
  let best: { candidate: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (!isCloseEnough(name, candidate, distance)) continue;
    if (best === undefined || distance < best.distance) best = { candidate, distance };
  }
  return best?.candidate;
}
