/**
 * The inputs of the `-host-firewall` command of a bare-metal member (Robot, Elastic Metal; the pools
 * declare it, this folder declares no resources): it keeps the host
 * firewall of the running machine equal to the cluster firewall's rules. The join loads the same
 * rules before the kubelet first starts; this command carries later rule changes to every member.
 *
 * Not paced by the rollout, on purpose: a rule change is a security change, and reloading it is
 * safe on all members at once. The reload (hostFirewall.ts renderHostFirewallReload) swaps
 * nodefleet's nftables table in one transaction and restarts nothing else, so running pods and
 * established connections are untouched; only new connections the new rules refuse are refused, as
 * a Hetzner Cloud firewall applies a rule change to all its servers at once. Draining would not
 * make a rule that locks out the control plane any safer.
 */
import type * as command from "@pulumi/command";
import type * as pulumi from "@pulumi/pulumi";
import { renderHostFirewallReload } from "./hostFirewall";
import type { HostFirewall } from "./selfJoinScript";

export interface HostFirewallCommandArgs {
  /** The pinned connection to the member's current machine. */
  readonly connection: pulumi.Input<command.types.input.remote.ConnectionArgs>;
  /** `bash -s`, or `sudo -n bash -s` for a non-root login. */
  readonly runScript: string;
  /** The cluster firewall's rules and the SSH port to keep open. */
  readonly hostFirewall: HostFirewall;
  /** The machine's id (install or server): a new machine runs it afresh (after its join). */
  readonly machineId: pulumi.Input<string>;
}

/**
 * A changed rule set updates the command, which runs `create` again: the idempotent reload. A new
 * machine replaces it. Declare it after the member's join (which loads the same rules first).
 */
export function hostFirewallCommandArgs(args: HostFirewallCommandArgs): command.remote.CommandArgs {
  return { connection: args.connection, create: args.runScript, stdin: renderHostFirewallReload(args.hostFirewall), triggers: [args.machineId], logging: "stderr" };
}
