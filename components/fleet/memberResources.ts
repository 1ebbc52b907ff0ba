/**
 * Which resources carry a member's Node drain, Node removal and bootstrap token (Hetzner Cloud), or
 * its Node removal, update drain, Node metadata and local PVC removal (bare metal, whose token stays
 * the BootstrapToken component). `plugin`: nodefleet's provider plugin (components/provider/), a
 * few hundred bytes of state each, the credentials once per pool. `dynamic`: the `pulumi.dynamic`
 * resources and BootstrapToken component of nodefleet before it, each carrying its serialized code
 * and the credentials. A member keeps the flavour it was created with until it leaves: moving it
 * would delete the old drain, removals and metadata, and their delete drains and deletes the live
 * Node (and a bare-metal member's local PVCs), and a new update drain would drain it again.
 */
export type MemberResources = "plugin" | "dynamic";

/** The flavour members created from now on get. */
export const NEW_MEMBER_RESOURCES: MemberResources = "plugin";

/** A recorded flavour; anything else (nothing recorded: created before the plugin) is `dynamic`. */
export function recordedMemberResources(value: unknown): MemberResources {
  return value === "plugin" ? "plugin" : "dynamic";
}
