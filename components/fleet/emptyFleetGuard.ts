/**
 * A stack config that declares no pools over a stack whose last update holds members would delete
 * every one of them, and a missing, misspelt or mis-merged `nodefleet:pools` looks exactly like
 * that. So it is refused unless the config says so in a setting of its own,
 * `nodefleet:allowEmptyFleet: true`, which nothing sets by accident.
 */

export const ALLOW_EMPTY_FLEET_KEY = "nodefleet:allowEmptyFleet";

/** Members per pool in a previous `nodes` output (each entry names its `pool`), in first-seen order. */
function membersByPool(previousNodes: unknown): Map<string, number> {
  const counts = new Map<string, number>();
  if (!Array.isArray(previousNodes)) return counts;
  for (const node of previousNodes) {
    const pool = (node as { pool?: unknown } | null)?.pool;
    const name = typeof pool === "string" ? pool : "(no pool)";
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  return counts;
}

/**
 * Why this run may not go ahead, as `path: message`, or undefined when it may: the config declares
 * no pools, the previous `nodes` output holds members, and `allowEmptyFleet` is not set.
 */
export function emptyFleetProblem(
  spec: { readonly pools: readonly unknown[]; readonly allowEmptyFleet: boolean },
  previousNodes: unknown,
): string | undefined {
  if (spec.pools.length > 0 || spec.allowEmptyFleet) return undefined;
  const counts = membersByPool(previousNodes);
  const members = [...counts.values()].reduce((sum, n) => sum + n, 0);
  if (members === 0) return undefined;
  const pools = [...counts].map(([pool, n]) => `${pool}: ${n}`).join(", ");
  return (
    `nodefleet:pools: no pools are declared (the key is missing or empty), but the stack's last update holds ${members} member${members === 1 ? "" : "s"} (${pools}), ` +
    `which this run would delete. To remove every pool on purpose, set ${ALLOW_EMPTY_FLEET_KEY}: true ` +
    `(pulumi config set ${ALLOW_EMPTY_FLEET_KEY} true) and run again`
  );
}
