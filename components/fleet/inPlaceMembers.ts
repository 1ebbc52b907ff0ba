/**
 * What a bare-metal pool's in-place rollout (Robot, Elastic Metal; fleet/rolloutPlan.ts
 * `planInPlaceRollout`) starts from: each member as the previous run left it, read back from its
 * node outputs, and the generation the rollout paces, the install's (or server's), the join's and
 * the kubelet config's together, so a reinstall, a version re-join and a kubelet restart each wait
 * their turn.
 */
import { generationHash } from "./generationSuffix";
import { type InPlaceMemberResources, NEW_IN_PLACE_MEMBER_RESOURCES, recordedInPlaceMemberResources } from "./memberResources";
import type { InPlaceRolloutStep } from "./rolloutPlan";

/** A bare-metal member as the previous run left it: what a member kept at its previous generation is declared with. */
export interface CurrentInPlaceMember {
  readonly nodeId: string;
  /** Its install generation (the rescue's or server's, the token's). */
  readonly generation: string;
  /** The hash of what its join last ran with. */
  readonly joinInputs: string;
  /** The hash of the kubelet config last re-pushed to it (Elastic Metal on kubeadm clusters); absent elsewhere. */
  readonly kubeletConfigHash?: string;
  /** Its Node (named like its hostname) is registered and Ready. */
  readonly ready: boolean;
  /**
   * The resources of its Node removal, drain, metadata, local PVC removal, token and rescue, as its
   * node output recorded (see fleet/memberResources.ts). Default `dynamic` (members recorded before it was).
   */
  readonly memberResources?: InPlaceMemberResources;
  /**
   * `generated`: its install put a host key nodefleet generated beforehand (Robot,
   * robot/pregeneratedHostKey.ts); absent: members installed before that, which pin what their install printed.
   */
  readonly installHostKey?: "generated";
}

/**
 * The flavour a bare-metal member is declared with: the one recorded for a current member; a member
 * not in `current` is new (`plugin-all`), unless nothing is known of the pool's members (`current`
 * absent), when `unrecorded` says (`dynamic` for a pool an earlier nodefleet recorded without rollouts).
 */
export function inPlaceMemberResources(
  current: readonly CurrentInPlaceMember[] | undefined,
  nodeId: string,
  unrecorded: InPlaceMemberResources = NEW_IN_PLACE_MEMBER_RESOURCES,
): InPlaceMemberResources {
  if (current === undefined) return unrecorded;
  const previous = current.find((c) => c.nodeId === nodeId);
  return previous ? recordedInPlaceMemberResources(previous.memberResources) : NEW_IN_PLACE_MEMBER_RESOURCES;
}

/**
 * The generation `planInPlaceRollout` compares: install (or server), join and re-pushed kubelet
 * config together. Without a kubelet config the hash is the one recorded before it counted.
 */
export function inPlaceRolloutGeneration(member: Pick<CurrentInPlaceMember, "generation" | "joinInputs" | "kubeletConfigHash">): string {
  const { generation, joinInputs, kubeletConfigHash } = member;
  return generationHash({ generation, joinInputs, ...(kubeletConfigHash !== undefined ? { kubeletConfigHash } : {}) });
}

/**
 * `ignoreChanges` of a remote command whose script runs on its triggers only (the join, the kubelet
 * re-push; see bootstrap/sshConnection.ts RECORD_ONLY_UPDATE): for a member declared at the
 * generation it runs (`keep`, `retain`), its triggers are the ones it last ran with, so it is not
 * replaced this run and its script stays the state's; a new label, taint or firewall rule in the
 * script then steps nothing (they reach the machine through the Node patch and the host-firewall
 * command). Never for `install` (no state, or one recorded without a rollout) or `update` (its
 * replacement must run the current script, with the current token).
 */
export function scriptIgnoredUnlessRunning(action: InPlaceRolloutStep["action"]): { ignoreChanges?: string[] } {
  return action === "keep" || action === "retain" ? { ignoreChanges: ["stdin"] } : {};
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
  extra: { readonly fields: readonly string[]; readonly read: (node: Readonly<Record<string, string>>) => Extra } = {
    fields: [],
    read: () => ({}) as Extra,
  },
): Array<CurrentInPlaceMember & Extra> | undefined {
  const nodes = previousNodes.filter((n) => n.pool === pool);
  const fields = ["nodeId", "hostname", "generation", "joinInputs", ...extra.fields];
  if (!nodes.every((n) => fields.every((f) => typeof n[f] === "string"))) return undefined;
  return (nodes as Array<Record<string, string>>).map((n) => ({
    nodeId: n.nodeId!,
    generation: n.generation!,
    joinInputs: n.joinInputs!,
    ...(typeof n.kubeletConfigHash === "string" ? { kubeletConfigHash: n.kubeletConfigHash } : {}),
    ready: readyNodeNames.has(n.hostname!),
    memberResources: recordedInPlaceMemberResources(n.memberResources),
    ...(n.installHostKey === "generated" ? { installHostKey: "generated" as const } : {}),
    ...extra.read(n),
  }));
}
