/**
 * Which resources carry a member's Node drain, Node removal and bootstrap token (Hetzner Cloud), or
 * its Node removal, removal drain, update drain, Node metadata, local PVC removal, bootstrap token
 * and Robot rescue (bare metal; the removal drain only for the plugin's flavours, see
 * provider/bareMetalMemberResources.ts `removalDrain`). `plugin`: nodefleet's provider plugin
 * (components/provider/), a few hundred bytes of state each, the credentials once per pool. `dynamic`: the `pulumi.dynamic` resources and
 * BootstrapToken component of nodefleet before it, each carrying its serialized code and the
 * credentials. A member keeps the flavour it was created with until it leaves: moving it would
 * delete the old drain, removals and metadata, and their delete drains and deletes the live Node
 * (and a bare-metal member's local PVCs), and a new update drain would drain it again.
 */
export type MemberResources = "plugin" | "dynamic";

/** The flavour Hetzner Cloud members created from now on get. */
export const NEW_MEMBER_RESOURCES: MemberResources = "plugin";

/** A recorded flavour; anything else (nothing recorded: created before the plugin) is `dynamic`. */
export function recordedMemberResources(value: unknown): MemberResources {
  return value === "plugin" ? "plugin" : "dynamic";
}

/**
 * A bare-metal member's flavour. `plugin-all`: every resource above from the plugin, the bootstrap
 * token one NodeBootstrapToken and, on Robot, the rescue the plugin's RobotRescue with the Robot
 * credentials once per pool. `plugin`: members created before that, with the plugin's Node removal,
 * update drain, metadata and PVC removal but the BootstrapToken component and the dynamic rescue,
 * which they keep (a new rescue reinstalls the server, and its delete-and-create is what a move of
 * provider costs). `dynamic`: as above.
 */
export type InPlaceMemberResources = MemberResources | "plugin-all";

/** The flavour bare-metal members created from now on get. */
export const NEW_IN_PLACE_MEMBER_RESOURCES: InPlaceMemberResources = "plugin-all";

/** A bare-metal member's recorded flavour; nothing recorded (created before the plugin) is `dynamic`. */
export function recordedInPlaceMemberResources(value: unknown): InPlaceMemberResources {
  return value === "plugin-all" || value === "plugin" ? value : "dynamic";
}
