/**
 * The inputs of the `-host-firewall` command of a bare-metal member (Robot, Elastic Metal; the pools
 * declare it): it keeps the running machine's host firewall equal to the cluster firewall's rules,
 * which the join loaded before the kubelet first started. Not paced by the rollout, on purpose: a
 * rule change is a security change, and the reload (hostFirewall.ts renderHostFirewallReload) swaps
 * nodefleet's nftables table in one transaction and restarts nothing, so it is safe on every member
 * at once, as a Hetzner Cloud firewall applies a change to all its servers. Draining would not make
 * a rule that locks out the control plane any safer.
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
  return {
    connection: args.connection,
    create: args.runScript,
    stdin: renderHostFirewallReload(args.hostFirewall),
    triggers: [args.machineId],
    logging: "stderr",
  };
}
