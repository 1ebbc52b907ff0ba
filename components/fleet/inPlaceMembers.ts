/**
 * What a bare-metal pool's in-place rollout (Robot, Elastic Metal; fleet/rolloutPlan.ts
 * `planInPlaceRollout`) starts from: each member as the previous run left it, read back from its
 * node outputs, and the generation the rollout paces, the install's (or server's) and the join's
 * together, so a reinstall and a version re-join each wait their turn.
 */
import { generationHash } from "./generationSuffix";

/** A bare-metal member as the previous run left it: what a member kept at its previous generation is declared with. */
export interface CurrentInPlaceMember {
  readonly nodeId: string;
  /** Its install generation (the rescue's or server's, the token's). */
  readonly generation: string;
  /** The hash of what its join last ran with. */
  readonly joinInputs: string;
  /** Its Node (named like its hostname) is registered and Ready. */
  readonly ready: boolean;
}

/** The generation `planInPlaceRollout` compares: install (or server) and join together. */
export function inPlaceRolloutGeneration(member: { readonly generation: string; readonly joinInputs: string }): string {
  return generationHash({ generation: member.generation, joinInputs: member.joinInputs });
}

/**
 * The previous run's node outputs of one pool as current members, `extra` copying further string
 * fields of each node. Undefined when a node of the pool was recorded by a nodefleet without
 * bare-metal rollouts (a field missing): that run declares the pool as before and records what the
 * next one needs.
 */
export function currentInPlaceMembers<Extra extends object = object>(
  previousNodes: ReadonlyArray<Record<string, unknown>>,
  pool: string,
  readyNodeNames: ReadonlySet<string>,
  extra: { readonly fields: readonly string[]; readonly read: (node: Readonly<Record<string, string>>) => Extra } = { fields: [], read: () => ({}) as Extra },
): Array<CurrentInPlaceMember & Extra> | undefined {
  const nodes = previousNodes.filter((n) => n.pool === pool);
  const fields = ["nodeId", "hostname", "generation", "joinInputs", ...extra.fields];
  if (!nodes.every((n) => fields.every((f) => typeof n[f] === "string"))) return undefined;
  return (nodes as Array<Record<string, string>>).map((n) => ({
    nodeId: n.nodeId!,
    generation: n.generation!,
    joinInputs: n.joinInputs!,
    ready: readyNodeNames.has(n.hostname!),
    ...extra.read(n),
  }));
}
