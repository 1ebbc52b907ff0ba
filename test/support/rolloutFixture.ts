/** A static pool's rollout in progress, for planner tests: every member Ready at an old generation, a new one wanted. */

/** `count` members `<prefix>-<i>` wanting generation `new`, each running at `old` in the spread group of its slot. */
export function membersAwaitingNewGeneration(count: number, prefix = "a") {
  const desired = Array.from({ length: count }, (_, i) => ({ nodeId: `${prefix}-${i}`, generation: "new", placementSlot: i }));
  const current = desired.map((m) => ({ nodeId: m.nodeId, generation: "old", ready: true, spreadGroup: Math.floor(m.placementSlot / 10) }));
  return { desired, current };
}
