/**
 * `nodefleet:hrobot:NodePool`: pre-bought Hetzner dedicated servers, adopted by Robot server
 * number, installed and joined to an existing cluster (k0s or kubeadm). Per member: `-rescue`
 * (rescue with the pool's keys, reset), `-hardware` and `-install` over SSH to the rescue
 * (installimage; it prints the installed system's host key), `-ready` and `-join` on the installed
 * system, then the host-firewall reload and, given a kubeconfig, the Node's metadata, its drain
 * before the member's removal, and its removal.
 * Rescue, token, metadata and removal are resources of nodefleet's plugin through the pool's
 * provider (robotRescueResource.ts, provider/bareMetalMemberResources.ts); members created before
 * it keep what they were created with (fleet/memberResources.ts).
 * Rescue connections accept any host key (docs/security.md says why); the installed system's is
 * pinned. Reinstalls and re-joins roll in place; what reaches a running server, and what is not
 * supported: components/robot/README.md and docs/operations.md (Hetzner Robot pools).
 */
import { renderKubeletRetirementScript } from "../bootstrap/kubeletRetirement";
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import * as random from "@pulumi/random";
import { type ClusterSpec, type FirewallSpec, type HetznerRobotPool, firewallSchema } from "../fleet/fleetSpec";
import { clusterFirewallRules } from "../fleet/firewallRules";
import { GATHER_HARDWARE_COMMAND, parseRescueHardware, renderAutosetup } from "./installimageAutosetup";
import { READ_HOST_KEY_COMMAND, RECORD_ONLY_UPDATE, parseHostKeyLine, sshAuth } from "../bootstrap/sshConnection";
import { hostFirewallCommandArgs } from "../bootstrap/hostFirewallCommand";
import type { KubernetesNodeRemoval } from "../kubernetes/kubernetesNodeRemoval";
import type { KubernetesNodeUpdateDrain } from "../kubernetes/kubernetesNodeDrain";
import type { InPlaceMemberResources } from "../fleet/memberResources";
import { BareMetalMemberResources } from "../provider/bareMetalMemberResources";
import type { NodeDrain } from "../provider/nodeDrainResource";
import type { NodeRemoval } from "../provider/nodeRemovalResource";
import type { NodeUpdateDrain } from "../provider/nodeUpdateDrainResource";
import {
  type InPlaceRolloutPlan,
  type InPlaceRolloutStep,
  type InPlaceRolloutSummary,
  inPlaceRolloutSummary,
  planInPlaceRollout,
} from "../fleet/rolloutPlan";
import { type NodeOutput, nodeOutputIdentity } from "../fleet/nodeMember";
import type { RobotCredentials } from "./robotClient";
import { type RobotMember, authorizedKeyFingerprints, keysToUpload, robotMembers } from "./robotPlan";
import {
  type CurrentInPlaceMember,
  inPlaceMemberResources,
  inPlaceRolloutGeneration,
  scriptIgnoredUnlessRunning,
} from "../fleet/inPlaceMembers";
import { type RobotRescue, configuredRobotCredentials } from "./robotRescue";
import { type RobotRescueResource, memberRobotRescue } from "./robotRescueResource";
import { RESCUE_INSTALL_COMMAND, renderRescueInstallScript } from "./robotRescueInstall";
import { HOST_KEY_SECRET_LENGTH, type HostKeyPair, hostKeyPairFromSecret } from "./pregeneratedHostKey";
import { renderWorkerSelfJoinScript } from "../bootstrap/selfJoinScript";
import { shellQuote } from "../bootstrap/shellScript";

/** Dials of a leaving member's retirement before its removal fails (a dead box: docs/operations.md). */
const RETIRE_DIAL_ERROR_LIMIT = 10;

export interface RobotNodePoolArgs {
  /** The cluster the nodes join: id, kind, apiServer, CA, versions, kubelet settings, token TTL. */
  readonly cluster: Omit<ClusterSpec, "kubeconfig">;
  /** The parsed pool (`hetznerRobotPoolSchema`): servers, sshKeyFingerprints, image, labels, taints. */
  readonly pool: HetznerRobotPool;
  /**
   * Robot webservice credentials; a secret. Default: secret config `nodefleet:hrobotUser` and
   * `nodefleet:hrobotPassword`, then HROBOT_USER / HROBOT_PASSWORD. Without any, the pool still
   * declares (render, simulation) and an install fails, naming the variables.
   */
  readonly robotCredentials?: pulumi.Input<RobotCredentials>;
  /** The Robot webservice URL. Default HROBOT_URL (the local cloud sets it), else https://robot-ws.your-server.de. */
  readonly robotBaseUrl?: string;
  /**
   * SSH private key (OpenSSH PEM) matching one of `sshKeyFingerprints`; a secret. Default: secret
   * config `nodefleet:sshPrivateKey`, then NODEFLEET_SSH_PRIVATE_KEY, then the ssh-agent.
   */
  readonly sshPrivateKey?: pulumi.Input<string>;
  /** Kubeconfig allowed to delete Nodes; a secret. Without it (render, simulation) removed members keep their Node. */
  readonly kubeconfig?: pulumi.Input<string>;
  /** `nodefleet:firewall`: its public rules become each server's nftables host firewall. Default: the defaults. */
  readonly firewall?: FirewallSpec;
  /**
   * The pool's members at the start of this run (previous `nodes` output plus Node readiness, see
   * fleet/inPlaceMembers.ts `currentInPlaceMembers`): what the rollout starts from. Default none: every member
   * is declared at its wanted generation at once, as on a first run.
   */
  readonly current?: readonly CurrentInPlaceMember[];
  /**
   * The flavour of members while `current` is absent (see fleet/inPlaceMembers.ts
   * `inPlaceMemberResources`). Default `plugin-all`; `dynamic` for a pool an earlier nodefleet recorded
   * without rollouts, whose members keep the dynamic resources they were created with.
   */
  readonly unrecordedMemberResources?: InPlaceMemberResources;
}

/** What the pool reports per node: serverId is the Robot server number, serverType the pool's serverType. */
export interface RobotNodeOutput extends NodeOutput {
  /** The install generation the server runs (its previous one while the rollout has not reached it). */
  readonly generation: string;
  /** The hash of what its join ran with (robotPlan.ts `joinInputs`): a new version re-joins. */
  readonly joinInputs: string;
  /** The installed system's pinned SSH host key. */
  readonly hostKey: pulumi.Output<string>;
  /** The resources of its Node removal, drain, metadata, token and rescue (see fleet/memberResources.ts); the next run keeps them. */
  readonly memberResources: InPlaceMemberResources;
  /** `generated`: its install put the host key nodefleet generated beforehand (installsWithGeneratedHostKey). */
  readonly installHostKey?: "generated";
}

/**
 * Whether a member's install puts a host key nodefleet generated beforehand (pregeneratedHostKey.ts),
 * which makes a killed install recoverable: every install from now on. An install that exists (the
 * member at the generation it runs, or a pool an earlier nodefleet recorded without rollouts) keeps
 * what it was created with, so its `-install` gets no new input.
 */
export function installsWithGeneratedHostKey(
  current: readonly CurrentInPlaceMember[] | undefined,
  unrecorded: InPlaceMemberResources | undefined,
  nodeId: string,
  generation: string,
): boolean {
  if (current === undefined) return unrecorded === undefined || unrecorded === "plugin-all";
  const previous = current.find((c) => c.nodeId === nodeId);
  if (!previous || previous.generation !== generation) return true;
  return previous.installHostKey === "generated";
}

/** Not a parsable key: a connection pinned to it fails instead of connecting unverified. */
export const UNKNOWN_INSTALLED_HOST_KEY = "installed-host-key-unknown";

/** The installed system's host key from the install command's stdout (its last `ssh-ed25519` line). */
export function installedHostKey(stdout: string | undefined): string {
  const keys = (stdout ?? "").split("\n").flatMap((line) => {
    try {
      return [parseHostKeyLine(line)];
    } catch {
      return [];
    }
  });
  return keys.pop() ?? UNKNOWN_INSTALLED_HOST_KEY;
}

/** Run on the installed system: wait for cloud-init (when the image has it) and check the hostname. */
export function readyCommand(hostname: string): string {
  return `if command -v cloud-init >/dev/null 2>&1; then cloud-init status --wait >/dev/null || true; fi; test "$(hostname)" = ${shellQuote(hostname)}`;
}

/** A stdin that fails the command: used when the hardware listing is unknown (never install blind). */
const FAIL_UNGATHERED = "echo 'nodefleet: the rescue system reported no disks' >&2\nexit 1\n";

export class RobotNodePool extends pulumi.ComponentResource {
  readonly rescues: Array<RobotRescue | RobotRescueResource> = [];
  readonly nodeRemovals: Array<KubernetesNodeRemoval | NodeRemoval> = [];
  readonly nodes: RobotNodeOutput[] = [];
  readonly updateDrains: Array<KubernetesNodeUpdateDrain | NodeUpdateDrain> = [];
  /** The drains that run before a removed member's rescue and Node are deleted. */
  readonly removalDrains: NodeDrain[] = [];
  /** This run's rollout step. */
  readonly rollout: InPlaceRolloutPlan;
  readonly rolloutSummary: InPlaceRolloutSummary;

  constructor(name: string, args: RobotNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("nodefleet:hrobot:NodePool", name, {}, opts);
    const { cluster, pool } = args;
    // Renders (and so validates versions) before any child is declared.
    const members = robotMembers(cluster, pool);
    this.rollout = planInPlaceRollout(
      members.map((m, slot) => ({ nodeId: m.member.nodeId, generation: inPlaceRolloutGeneration(m), placementSlot: slot })),
      (args.current ?? []).map((c) => ({ nodeId: c.nodeId, generation: inPlaceRolloutGeneration(c), ready: c.ready })),
      pool.rollout.maxUnavailable,
    );
    const current = new Map((args.current ?? []).map((c) => [c.nodeId, c]));
    const planned = new Map(members.map((m) => [m.member.nodeId, m]));
    this.rolloutSummary = inPlaceRolloutSummary(pool.name, this.rollout, (nodeId) =>
      current.get(nodeId)?.generation === planned.get(nodeId)?.generation ? "re-join" : "reinstall",
    );
    const credentials = args.robotCredentials !== undefined ? pulumi.secret(args.robotCredentials) : configuredRobotCredentials();
    // Installs and reboots take minutes: keep dialling (the provider backs off between attempts).
    const connection = { user: "root", port: 22, dialErrorLimit: 100, perDialTimeout: 30, ...sshAuth(args) };
    // The plugin's rescues take the credentials from the pool's provider, else from the plugin's environment.
    const providerCredentials =
      args.robotCredentials !== undefined ? pulumi.secret(args.robotCredentials) : configuredRobotCredentials(false);
    const clusterSide = new BareMetalMemberResources(name, args.kubeconfig, this, providerCredentials);

    for (const step of this.rollout.members) {
      const wanted = planned.get(step.nodeId) as RobotMember;
      const previous = current.get(step.nodeId);
      // Kept at its previous generation: the install and join it last ran with, unchanged.
      const declared =
        step.action === "retain" && previous ? { ...wanted, generation: previous.generation, joinInputs: previous.joinInputs } : wanted;
      const resources = inPlaceMemberResources(args.current, step.nodeId, args.unrecordedMemberResources);
      const generatedHostKey = installsWithGeneratedHostKey(args.current, args.unrecordedMemberResources, step.nodeId, declared.generation);
      this.nodes.push(
        this.declareMember(name, args, declared, step.action, credentials, connection, { clusterSide, resources, generatedHostKey }),
      );
    }
    this.registerOutputs({ nodes: this.nodes, rollout: this.rolloutSummary });
  }

  private declareMember(
    name: string,
    args: RobotNodePoolArgs,
    planned: RobotMember,
    action: InPlaceRolloutStep["action"],
    credentials: pulumi.Input<RobotCredentials | undefined> | undefined,
    connection: { user: string; port: number; dialErrorLimit: number; perDialTimeout: number } & ReturnType<typeof sshAuth>,
    {
      clusterSide,
      resources,
      generatedHostKey,
    }: { clusterSide: BareMetalMemberResources; resources: InPlaceMemberResources; generatedHostKey: boolean },
  ): RobotNodeOutput {
    const { cluster, pool } = args;
    const { member, generation, userData, joinInputs } = planned;
    const prefix = `${name}-${member.nodeId}`;
    const rolloutGeneration = inPlaceRolloutGeneration(planned);
    // A retained member's install and join keep the script and keys they ran with (the state's).
    const retained = action === "retain";

    // Named by generation: a reinstall gets a fresh token.
    const token = clusterSide.bootstrapToken(`${prefix}-${generation}-token`, cluster, member.hostname, resources);
    // Named by member, not generation: a reinstall keeps it; removing the member deletes the Node.
    const nodeRemoval = clusterSide.nodeRemoval(member.hostname, resources);
    if (nodeRemoval) this.nodeRemovals.push(nodeRemoval);
    // Its turn: the Node is drained before the rescue (a reinstall) or the join (a re-join) runs.
    const drain =
      action === "update"
        ? clusterSide.updateDrain(member.hostname, rolloutGeneration, pool.rollout.drainTimeoutSeconds, resources)
        : undefined;
    if (drain) this.updateDrains.push(drain);

    const rescue = memberRobotRescue(
      `${prefix}-rescue`,
      {
        serverNumber: planned.serverNumber,
        fingerprints: authorizedKeyFingerprints(pool),
        generation,
        uploadKeys: keysToUpload(pool),
        credentials,
        baseUrl: args.robotBaseUrl ?? (process.env.HROBOT_URL || undefined),
        // Each reboot is checked to have reached the rescue, escalating ssh reboot, sw, hw (rescueBootLadder.ts).
        checkRescue: true,
        ...(connection.privateKey !== undefined ? { sshPrivateKey: connection.privateKey } : {}),
      },
      resources,
      clusterSide,
      {
        parent: this,
        dependsOn: [...(nodeRemoval ? [nodeRemoval] : []), ...(drain ? [drain] : [])],
        deleteBeforeReplace: true,
        ...(retained ? { ignoreChanges: ["serverNumber", "fingerprints"] } : {}),
      },
    );
    this.rescues.push(rescue);
    const host = rescue.serverIp;

    // Rescue system: its host key is new on every boot, so not pinned (see the file comment).
    const rescueConnection = { host, ...connection };
    const hardware = new command.remote.Command(
      `${prefix}-hardware`,
      // update: a changed connection alone re-reads the disks (read-only wherever it lands).
      {
        connection: rescueConnection,
        create: GATHER_HARDWARE_COMMAND,
        update: GATHER_HARDWARE_COMMAND,
        triggers: [rescue.id, generation],
        logging: "stderr",
      },
      { parent: this, dependsOn: [rescue] },
    );
    const script = (stdout: string | undefined, hostKey?: HostKeyPair) => {
      if (stdout === undefined || stdout.trim() === "") return FAIL_UNGATHERED;
      const { firmware, drives } = parseRescueHardware(stdout);
      const autosetup = renderAutosetup({ drives, hostname: member.hostname, image: pool.image, firmware });
      return renderRescueInstallScript({ autosetup, drives, hostname: member.hostname, firmware, ...(hostKey ? { hostKey } : {}) });
    };
    // Named by generation: a reinstall gets a new host key. Its secret is a secret of the state.
    const keyPair = generatedHostKey
      ? new random.RandomPassword(
          `${prefix}-${generation}-host-key`,
          { length: HOST_KEY_SECRET_LENGTH, special: false },
          { parent: this },
        ).result.apply((secret) => hostKeyPairFromSecret(secret, member.hostname))
      : undefined;
    const install = new command.remote.Command(
      `${prefix}-install`,
      {
        connection: rescueConnection,
        create: RESCUE_INSTALL_COMMAND,
        // A changed connection or disk listing alone never reinstalls: the system is installed, so
        // this re-reads its host key (the same install's, and the last line, as installedHostKey reads).
        update: READ_HOST_KEY_COMMAND,
        stdin: keyPair
          ? pulumi.secret(pulumi.all([hardware.stdout, keyPair]).apply(([stdout, pair]) => script(stdout, pair)))
          : hardware.stdout.apply((stdout) => script(stdout)),
        triggers: [rescue.id, generation],
        logging: "stderr",
      },
      { parent: this, dependsOn: [hardware], ...(retained ? { ignoreChanges: ["stdin"] } : {}) },
    );
    // Pinned to the generated key when there is one (never learnt from the box); else to what the install printed.
    const hostKey = keyPair ? pulumi.unsecret(keyPair.apply((pair) => pair.publicKey)) : install.stdout.apply(installedHostKey);

    // Installed system: pinned to the host key generated during the install.
    const pinned = { host, hostKey, ...connection };
    const ready = new command.remote.Command(
      `${prefix}-ready`,
      { connection: pinned, create: readyCommand(member.hostname), triggers: [install.id], logging: "stderr" },
      { parent: this, dependsOn: [install] },
    );
    // Dedicated servers have no provider firewall in front: the cluster firewall's rules on the host.
    const hostFirewall = { rules: clusterFirewallRules(cluster, args.firewall ?? firewallSchema.parse({})), sshPort: 22 };
    const joined = new command.remote.Command(
      `${prefix}-join`,
      {
        connection: pinned,
        create: "bash -s",
        stdin: pulumi.secret(token.token.apply((secret) => renderWorkerSelfJoinScript(userData, secret, undefined, hostFirewall))),
        // Only a reinstall or a new version (the triggers, paced by the rollout) re-runs it: a script
        // changed by labels, taints or firewall rules alone runs nothing (they reach the machine below).
        update: RECORD_ONLY_UPDATE,
        triggers: [install.id, joinInputs],
        logging: "stderr",
      },
      { parent: this, dependsOn: [token.resource, ready, ...(drain ? [drain] : [])], ...scriptIgnoredUnlessRunning(action) },
    );
    // Firewall rule changes reach every running member at once (bootstrap/hostFirewallCommand.ts says why that is safe).
    new command.remote.Command(
      `${prefix}-host-firewall`,
      hostFirewallCommandArgs({ connection: pinned, runScript: "bash -s", hostFirewall, machineId: install.id }),
      { parent: this, dependsOn: [joined] },
    );
    // Only the member's leaving runs it (no create, no update: it costs no SSH session until then).
    // Named by member, not generation, so a reinstall keeps it; it depends on the join, so it runs
    // before the rescue is deactivated and the Node deleted: the kubelet is stopped and its
    // credentials gone before the Node leaves the cluster, and nothing on the box can rejoin.
    const retire = new command.remote.Command(
      `${prefix}-retire`,
      {
        // A box that never answers fails the removal after about 10 dials, not after the install's
        // patience (docs/operations.md says how to remove a dead box's member).
        connection: { ...pinned, dialErrorLimit: RETIRE_DIAL_ERROR_LIMIT },
        delete: renderKubeletRetirementScript(member.hostname),
        logging: "stderr",
      },
      { parent: this, dependsOn: [joined] },
    );
    // Removing the member drains its Node first, while its kubelet still runs (it confirms the
    // evicted pods gone): the drain depends on the retirement, so it is deleted before it.
    const removalDrain = clusterSide.removalDrain(member.hostname, pool.rollout.drainTimeoutSeconds, resources, retire);
    if (removalDrain) this.removalDrains.push(removalDrain);
    // Labels and taints converge on every member now; a moved generation also uncordons the drained Node.
    clusterSide.nodeMetadata(
      `${prefix}-node-metadata`,
      { nodeName: member.hostname, labels: member.labels, taints: member.taints, generation: rolloutGeneration },
      resources,
      [joined],
    );

    return {
      ...nodeOutputIdentity(member),
      generation,
      joinInputs,
      serverId: rescue.id,
      ipv4: host.apply((h) => h || undefined),
      privateIpv4: pulumi.output(undefined),
      hostKey,
      memberResources: resources,
      ...(generatedHostKey ? { installHostKey: "generated" as const } : {}),
    };
  }
}
