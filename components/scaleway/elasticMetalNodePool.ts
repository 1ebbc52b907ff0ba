/**
 * `nodefleet:scaleway:ElasticMetalNodePool`: Scaleway Elastic Metal workers joining an existing
 * cluster (k0s or kubeadm). Per pool: offer/OS/option look-ups and the private network (attached by
 * `privateNetwork.id` or created). Per member: an IPAM address, a bootstrap token, the server, the
 * bootstrap the offer decides (cloud-init or the SSH self-join, elasticMetalPlan.ts
 * `bootstrapMethod`), SSH commands that pin the host key read on first use, and, given a kubeconfig,
 * the Node's metadata, drain before removal, removal and local PVCs (resources of nodefleet's plugin through the pool's
 * provider, the token one too, or for members created before it their dynamic ones and token
 * component: provider/bareMetalMemberResources.ts).
 * Changes roll one member at a time, in place
 * (fleet/rolloutPlan.ts `planInPlaceRollout`). What reaches a running member, and how:
 * components/scaleway/README.md; why: docs/operations.md (bare-metal notes).
 */
import * as command from "@pulumi/command";
import * as pulumi from "@pulumi/pulumi";
import * as scaleway from "@pulumiverse/scaleway";
import { elasticMetalOs } from "./elasticMetalOs";
import {
  type BootstrapMethod,
  ELASTIC_METAL_REPLACE_ON_CHANGES,
  IPAM_IP_REPLACE_ON_CHANGES,
  PRIVATE_IPV4_LABEL,
  type CurrentElasticMetalMember,
  bootstrapMethod,
  elasticMetalGeneration,
  elasticMetalJoinInputs,
  elasticMetalMembers,
  privateAddressCidr,
  scalewayRegion,
} from "./elasticMetalPlan";
import {
  type CurrentInPlaceMember,
  inPlaceMemberResources,
  inPlaceRolloutGeneration,
  scriptIgnoredUnlessRunning,
} from "../fleet/inPlaceMembers";
import type { InPlaceMemberResources } from "../fleet/memberResources";
import { type ClusterSpec, type FirewallSpec, type ScalewayElasticMetalPool, firewallSchema } from "../fleet/fleetSpec";
import { clusterFirewallRules } from "../fleet/firewallRules";
import { assertElasticMetalCloudInitSize, renderSelfJoinCloudConfig } from "../bootstrap/kubeadmWorkerCloudConfig";
import { kubeletConfigHash, renderKubeletConfig } from "../bootstrap/kubeletConfig";
import { renderKubeletConfigRepush } from "../bootstrap/kubeletConfigRepush";
import { type NodeMember, type NodeOutput, OWNERSHIP_LABELS, nodeMember, nodeOutputIdentity } from "../fleet/nodeMember";
import type { KubernetesNodeUpdateDrain } from "../kubernetes/kubernetesNodeDrain";
import {
  type InPlaceRolloutPlan,
  type InPlaceRolloutStep,
  type InPlaceRolloutSummary,
  inPlaceRolloutSummary,
  planInPlaceRollout,
} from "../fleet/rolloutPlan";
import type { KubernetesNodeRemoval } from "../kubernetes/kubernetesNodeRemoval";
import { BareMetalMemberResources } from "../provider/bareMetalMemberResources";
import type { NodeDrain } from "../provider/nodeDrainResource";
import type { NodeRemoval } from "../provider/nodeRemovalResource";
import type { NodeUpdateDrain } from "../provider/nodeUpdateDrainResource";
import { type PrivateNetworkJoin, renderVlanIdDelivery, renderWorkerSelfJoinScript } from "../bootstrap/selfJoinScript";
import { workerUserDataInputs } from "../bootstrap/workerUserDataInputs";
import { READ_HOST_KEY_COMMAND, RECORD_ONLY_UPDATE, UNREAD_HOST_KEY, parseHostKeyLine, sshAuth } from "../bootstrap/sshConnection";
import { hostFirewallCommandArgs } from "../bootstrap/hostFirewallCommand";
import { errorMessage } from "../shared/errorMessage";
import {
  ELASTIC_METAL_CUSTOM_TIMEOUTS,
  attachmentVlan,
  elasticMetalTokenTtlMinutes,
  reportedVlan,
  resolveVlan,
  vlanWaitSeconds,
} from "./elasticMetalVlan";

export interface ElasticMetalNodePoolArgs {
  /** The cluster the nodes join: id, kind, apiServer, CA, versions, kubelet settings, token TTL. */
  readonly cluster: Omit<ClusterSpec, "kubeconfig">;
  /** The parsed pool (`scalewayElasticMetalPoolSchema`): zone, offer, os, privateNetwork, members, bootstrap, ssh. */
  readonly pool: ScalewayElasticMetalPool;
  /**
   * Id of the private network to attach, e.g. one shared by several pools. Default:
   * `pool.privateNetwork.id`, else a network named `pool.privateNetwork.name` that the pool creates
   * (tagged with the cluster and pool), or, when another fleet's network has that name, that one
   * (attached to, never managed).
   */
  readonly privateNetworkId?: pulumi.Input<string>;
  /**
   * SSH private key (OpenSSH PEM) for the self-join, the VLAN delivery and re-pushes; a secret.
   * Default: secret config `nodefleet:sshPrivateKey`, then NODEFLEET_SSH_PRIVATE_KEY, then the
   * ssh-agent at SSH_AUTH_SOCK.
   */
  readonly sshPrivateKey?: pulumi.Input<string>;
  /**
   * Kubeconfig allowed to delete Nodes, list PVs and delete PVCs (token or client-certificate user);
   * a secret. Without it (render, simulation) nothing is removed from the cluster on deletion.
   */
  readonly kubeconfig?: pulumi.Input<string>;
  /**
   * `nodefleet:firewall`: its public rules (kubelet from the control plane, WireGuard, ICMP,
   * NodePorts, extra rules) become each server's host firewall, loaded before the kubelet starts.
   * Default: the defaults (no NodePorts, no extra rules).
   */
  readonly firewall?: FirewallSpec;
  /**
   * The pool's members at the start of this run (previous `nodes` output plus Node readiness, see
   * elasticMetalPlan.ts `currentElasticMetalMembers`): what the rollout starts from. Default none:
   * every member is declared at its wanted generation at once, as on a first run.
   */
  readonly current?: readonly CurrentElasticMetalMember[];
  /**
   * The flavour of members while `current` is absent (see fleet/inPlaceMembers.ts
   * `inPlaceMemberResources`). Default `plugin-all`; `dynamic` for a pool an earlier nodefleet recorded
   * without rollouts, whose members keep the dynamic resources they were created with.
   */
  readonly unrecordedMemberResources?: InPlaceMemberResources;
}

/** What the pool reports per node: serverType is the offer name, location the Scaleway zone. */
export interface ElasticMetalNodeOutput extends NodeOutput {
  readonly bootstrap: BootstrapMethod;
  /** The server generation it runs (its previous one while the rollout has not reached it). */
  readonly generation: string;
  /** The hash of what its join ran with (elasticMetalPlan.ts `elasticMetalJoinInputs`): a new version re-joins. */
  readonly joinInputs: string;
  /** Always set: Elastic Metal nodes join over the private network. */
  readonly privateIpv4: pulumi.Output<string>;
  readonly vlan: pulumi.Output<number | undefined>;
  /** The pinned SSH host key (authorized_keys format). */
  readonly hostKey: pulumi.Output<string>;
  /** sha256 of the kubelet config last re-pushed (kubeadm clusters): its previous one while the rollout has not reached it. */
  readonly kubeletConfigHash?: string;
  /** The resources of its Node removal, drain, metadata and local PVC removal (see fleet/memberResources.ts); the next run keeps them. */
  readonly memberResources: InPlaceMemberResources;
}

/** The UUID part of a Scaleway id (`fr-par/<uuid>` or `<uuid>`), to compare ids across id formats. */
function uuidOf(id: string): string {
  return id.split("/").pop() ?? id;
}

/** The provider's answer when no private network has the name (datasource.FindExact). */
const PRIVATE_NETWORK_NOT_FOUND = /no element found with the name/;

/**
 * Whether a look-up error means "no network of that name" (create it) rather than a failure (an
 * outage, a permission or a duplicate name), which must stop the run instead of creating a duplicate.
 */
export function isPrivateNetworkNotFound(error: unknown): boolean {
  return PRIVATE_NETWORK_NOT_FOUND.test(errorMessage(error));
}

/** The look-up's network, undefined when none has the name; any other failure is rethrown, naming the pool. */
export async function settlePrivateNetworkLookup<T>(
  pool: Pick<ScalewayElasticMetalPool, "name" | "privateNetwork">,
  region: string,
  lookup: Promise<T>,
): Promise<T | undefined> {
  try {
    return await lookup;
  } catch (error) {
    if (isPrivateNetworkNotFound(error)) return undefined;
    const reason = error instanceof Error && error.message ? error.message : String(error);
    throw new Error(
      `pool ${pool.name}: looking up private network ${pool.privateNetwork.name} in ${region} failed, so none is created: ${reason}`,
    );
  }
}

/** What the look-up of `privateNetwork.name` found: its id, tags and IPv4 subnets (`getPrivateNetwork`). */
export interface FoundPrivateNetwork {
  readonly id: string;
  readonly tags?: readonly string[];
  readonly ipv4Subnets?: ReadonlyArray<{ readonly subnet?: string }>;
}

/**
 * A network of `privateNetwork.name` that this pool did not create is shared: another fleet or
 * team made it and owns it, so the pool attaches to it and never changes or deletes it (the
 * original fleets shared one network by name). Its id, once its subnet is checked to be
 * `privateNetwork.subnet` (the members' addresses are drawn from it); undefined when no network
 * has the name or the one found is the pool's own (tagged with the cluster and pool), which the
 * pool declares.
 */
export function sharedPrivateNetworkId(
  pool: Pick<ScalewayElasticMetalPool, "name" | "privateNetwork">,
  poolTags: readonly string[],
  found: FoundPrivateNetwork | undefined,
): string | undefined {
  if (found === undefined || poolTags.every((tag) => (found.tags ?? []).includes(tag))) return undefined;
  const subnets = (found.ipv4Subnets ?? []).map((s) => s.subnet).filter((s): s is string => typeof s === "string");
  if (!subnets.includes(pool.privateNetwork.subnet)) {
    throw new Error(
      `pool ${pool.name}: privateNetwork.subnet is ${pool.privateNetwork.subnet}, but the shared private network ${pool.privateNetwork.name} (${found.id}) has ${subnets.join(", ") || "no IPv4 subnet"}; set privateNetwork.subnet to its subnet`,
    );
  }
  return found.id;
}

/**
 * Inputs of a server kept at its previous generation that the engine keeps from the state: its
 * offer, OS and zone (changing them replaces it) and its cloud-init (the join it was created with).
 */
export const RETAINED_ELASTIC_METAL_IGNORED_INPUTS = ["offer", "os", "zone", "cloudInit"] as const;

/** What the pool decided for one member: its bootstrap, generation, rollout action, look-ups and SSH connection. */
interface MemberContext {
  readonly method: BootstrapMethod;
  readonly region: string;
  readonly generation: string;
  readonly joinInputs: string;
  /** The kubelet config hash to declare the re-push with (kubeadm): a retained member's previous one. */
  readonly kubeletConfigHash?: string;
  readonly action: InPlaceRolloutStep["action"];
  /** The flavour of its cluster-side resources (see fleet/memberResources.ts). */
  readonly resources: InPlaceMemberResources;
  readonly poolTags: string[];
  readonly offerId: pulumi.Output<string>;
  readonly osId: pulumi.Output<string>;
  readonly optionId: pulumi.Output<string>;
  readonly connection: {
    user: string;
    port: number;
    dialErrorLimit: number;
    perDialTimeout: number;
    privateKey?: pulumi.Input<string>;
    agentSocketPath?: string;
  };
  readonly runScript: string;
}

/** What each of one member's resources is declared from: its name prefix and tags, the pool's args, the member and its context. */
interface MemberScope {
  readonly prefix: string;
  readonly args: ElasticMetalNodePoolArgs;
  readonly member: NodeMember;
  readonly ctx: MemberContext;
  readonly nodeTags: string[];
}

/** The member's address on the private network, with the subnet's prefix length. */
type PrivateAddress = ReturnType<typeof privateAddressCidr>;

/** An SSH connection that verifies the server's pinned host key. */
type PinnedConnection = MemberContext["connection"] & { host: pulumi.Output<string>; hostKey: pulumi.Output<string> };

/** Elastic Metal has no provider firewall: the cluster firewall's public rules become the host's nftables rules. */
export function hostFirewallOf(args: ElasticMetalNodePoolArgs) {
  return { rules: clusterFirewallRules(args.cluster, args.firewall ?? firewallSchema.parse({})), sshPort: args.pool.ssh.port };
}

export type JoinRenderer = (secret: string, address: PrivateAddress, vlanId: PrivateNetworkJoin["vlanId"]) => string;

/** The self-join script, rendered the same for cloud-init and SSH, once the token, address and VLAN are known. */
export function joinScriptRenderer(
  cluster: ElasticMetalNodePoolArgs["cluster"],
  member: NodeMember,
  hostFirewall: ReturnType<typeof hostFirewallOf>,
): JoinRenderer {
  // The node registers with its private IPv4 as a label, next to the member's own labels.
  return (secret, address, vlanId) =>
    renderWorkerSelfJoinScript(
      workerUserDataInputs(cluster, {
        hostname: member.hostname,
        providerID: member.providerID,
        labels: { ...member.labels, [PRIVATE_IPV4_LABEL]: address.ipv4 },
        taints: member.taints,
        // The IPAM address, up on the VLAN before the kubelet starts, is the node's InternalIP.
        ...(cluster.nodeAddress !== "public" ? { nodeIp: { address: address.ipv4 } } : {}),
      }),
      secret,
      { vlanId, addressCidr: address.cidr },
      hostFirewall,
    );
}

/** The cloud-init path's copy of the join, which waits for the VLAN id delivered over SSH; a secret. */
function cloudInitJoin(
  member: NodeMember,
  tokenSecret: pulumi.Output<string>,
  privateAddress: pulumi.Output<PrivateAddress>,
  renderJoin: JoinRenderer,
): pulumi.Output<string> {
  return pulumi.secret(
    pulumi.all([tokenSecret, privateAddress]).apply(([secret, address]) => {
      const text = renderSelfJoinCloudConfig(renderJoin(secret, address, "wait"));
      assertElasticMetalCloudInitSize(member.hostname, text);
      return text;
    }),
  );
}

/** The join over SSH: on the cloud-init path it first lets cloud-init finish (whose copy normally joined already); a secret. */
function joinStdin(
  member: NodeMember,
  method: BootstrapMethod,
  tokenSecret: pulumi.Output<string>,
  privateAddress: pulumi.Output<PrivateAddress>,
  vlan: pulumi.Output<number | undefined>,
  renderJoin: JoinRenderer,
): pulumi.Output<string> {
  const waitForCloudInit = method === "cloud-init" ? "cloud-init status --wait >/dev/null 2>&1 || true\n" : "";
  return pulumi.secret(
    pulumi
      .all([tokenSecret, privateAddress, vlan])
      .apply(([secret, address, vlanId]) => waitForCloudInit + renderJoin(secret, address, knownVlan(member, vlanId))),
  );
}

/** The VLAN id the server reports, refused while it reports none, 0 included (the script cannot configure the interface). */
function knownVlan(member: NodeMember, vlanId: number | undefined): number {
  const vlan = reportedVlan(member.hostname, vlanId);
  if (vlan === undefined) throw new Error(`node ${member.hostname}: the server reports no VLAN for the private network yet`);
  return vlan;
}

export class ElasticMetalNodePool extends pulumi.ComponentResource {
  readonly privateNetworkId: pulumi.Output<string>;
  readonly servers: scaleway.elasticmetal.Server[] = [];
  readonly nodeRemovals: Array<KubernetesNodeRemoval | NodeRemoval> = [];
  readonly nodes: ElasticMetalNodeOutput[] = [];
  readonly updateDrains: Array<KubernetesNodeUpdateDrain | NodeUpdateDrain> = [];
  /** The drains that run before a removed member's server is deleted. */
  readonly removalDrains: NodeDrain[] = [];
  /** The members' Node removal, drains, metadata and local PVC removal, in each member's flavour. */
  private readonly clusterSide: BareMetalMemberResources;
  /** This run's rollout step. */
  readonly rollout: InPlaceRolloutPlan;
  /** How long `up` waits for a VLAN tag Scaleway reports late (elasticMetalVlan.ts). */
  private readonly vlanWaitSeconds = vlanWaitSeconds();
  readonly rolloutSummary: InPlaceRolloutSummary;

  constructor(name: string, args: ElasticMetalNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("nodefleet:scaleway:ElasticMetalNodePool", name, {}, opts);
    this.clusterSide = new BareMetalMemberResources(name, args.kubeconfig, this);
    const { cluster, pool } = args;
    // Everything decidable without the cloud is checked before any child is declared.
    const os = elasticMetalOs(pool.os);
    const region = scalewayRegion(pool.zone);
    const generation = elasticMetalGeneration(pool);
    const members = elasticMetalMembers(cluster, pool);
    // No member, no bootstrap to fit (a pool scaled to zero needs no SSH key).
    const method = members.length > 0 ? bootstrapMethod(pool) : "ssh";
    if (cluster.kind === "k0s" && !cluster.k0sVersion) throw new Error(`pool ${pool.name}: k0sVersion is required for k0s clusters`);
    if (cluster.kind === "kubeadm" && !cluster.kubernetesVersion)
      throw new Error(`pool ${pool.name}: kubernetesVersion is required for kubeadm clusters`);
    const poolTags = [`${OWNERSHIP_LABELS.cluster}=${cluster.id}`, `${OWNERSHIP_LABELS.pool}=${pool.name}`];
    // What each member should run: its server, its join and (kubeadm) its re-pushed kubelet config.
    const wantedOf = new Map<string, Omit<CurrentInPlaceMember, "nodeId" | "ready">>(
      members.map((m) => [
        m.nodeId,
        {
          generation,
          joinInputs: elasticMetalJoinInputs(cluster, m),
          ...(cluster.kind === "kubeadm"
            ? { kubeletConfigHash: kubeletConfigHash(renderKubeletConfig({ kubelet: cluster.kubelet, providerID: m.providerID })) }
            : {}),
        },
      ]),
    );
    this.rollout = planInPlaceRollout(
      members.map((m, slot) => ({ nodeId: m.nodeId, generation: inPlaceRolloutGeneration(wantedOf.get(m.nodeId)!), placementSlot: slot })),
      (args.current ?? []).map((c) => ({ nodeId: c.nodeId, generation: inPlaceRolloutGeneration(c), ready: c.ready })),
      pool.rollout.maxUnavailable,
    );
    const current = new Map((args.current ?? []).map((c) => [c.nodeId, c]));
    this.rolloutSummary = inPlaceRolloutSummary(pool.name, this.rollout, (nodeId) => {
      const previous = current.get(nodeId);
      if (previous?.generation !== generation) return "replace";
      return previous.joinInputs !== wantedOf.get(nodeId)?.joinInputs ? "re-join" : "kubelet-config";
    });

    const offer = scaleway.elasticmetal.getOfferOutput({ zone: pool.zone, name: pool.offer }, { parent: this });
    const osImage = scaleway.elasticmetal.getOsOutput({ zone: pool.zone, name: os.name, version: os.version }, { parent: this });
    const privateNetworkOption = scaleway.elasticmetal.getOptionOutput({ zone: pool.zone, name: "Private Network" }, { parent: this });
    const attachTo = args.privateNetworkId ?? pool.privateNetwork.id;
    this.privateNetworkId = attachTo !== undefined ? pulumi.output(attachTo) : this.declarePrivateNetwork(name, pool, region, poolTags);
    const auth = sshAuth(args);
    const sshUser = pool.ssh.user ?? os.sshUser;
    // stdin carries the script, so no secret is ever on a command line (visible in the process list).
    const runScript = sshUser === "root" ? "bash -s" : "sudo -n bash -s";

    const byNodeId = new Map(members.map((m) => [m.nodeId, m]));
    for (const step of this.rollout.members) {
      const previous = current.get(step.nodeId);
      // Kept at its previous generation: the server (offer, OS, zone) and the join it last ran with.
      const kept = step.action === "retain" && previous !== undefined ? previous : undefined;
      const member = kept
        ? nodeMember(
            cluster,
            { pool: pool.name, serverType: kept.offer, location: kept.zone, labels: pool.labels, taints: pool.taints },
            step.nodeId,
          )
        : (byNodeId.get(step.nodeId) as NodeMember);
      const wanted = wantedOf.get(step.nodeId)!;
      this.nodes.push(
        this.declareMember(name, args, member, {
          method,
          region,
          generation: kept?.generation ?? wanted.generation,
          joinInputs: kept?.joinInputs ?? wanted.joinInputs,
          // A member recorded before its config was: the wanted one (as it was re-pushed unpaced then).
          ...(wanted.kubeletConfigHash !== undefined ? { kubeletConfigHash: kept?.kubeletConfigHash ?? wanted.kubeletConfigHash } : {}),
          action: step.action,
          resources: inPlaceMemberResources(args.current, step.nodeId, args.unrecordedMemberResources),
          poolTags,
          offerId: offer.apply((o) => o.offerId ?? uuidOf(o.id)),
          osId: osImage.apply((o) => o.osId ?? uuidOf(o.id)),
          optionId: privateNetworkOption.apply((o) => o.optionId ?? uuidOf(o.id)),
          connection: { user: sshUser, port: pool.ssh.port, dialErrorLimit: 60, perDialTimeout: 30, ...auth },
          runScript,
        }),
      );
    }
    this.registerOutputs({ privateNetworkId: this.privateNetworkId, nodes: this.nodes, rollout: this.rolloutSummary });
  }

  /**
   * The network `privateNetwork.name`: a shared one (another fleet's) is attached to as it is; else
   * the pool declares it. The declaration waits for the look-up, which a preview runs too, so
   * previews show it; a failed look-up fails the run and nothing is created.
   */
  private declarePrivateNetwork(name: string, pool: ScalewayElasticMetalPool, region: string, poolTags: string[]): pulumi.Output<string> {
    const lookup = settlePrivateNetworkLookup(
      pool,
      region,
      scaleway.network.getPrivateNetwork({ name: pool.privateNetwork.name, region }, { parent: this }),
    );
    return pulumi.output(lookup).apply((found) => {
      const shared = sharedPrivateNetworkId(pool, poolTags, found);
      if (shared !== undefined) {
        pulumi.log.info(
          `pool ${pool.name}: attaching to the shared private network ${pool.privateNetwork.name} (${shared}); it is not managed here`,
          this,
        );
        return pulumi.output(shared);
      }
      const network = new scaleway.network.PrivateNetwork(
        `${name}-pn`,
        { name: pool.privateNetwork.name, region, ipv4Subnet: { subnet: pool.privateNetwork.subnet }, tags: poolTags },
        { parent: this },
      );
      return network.id;
    });
  }

  /** One member's resources, one helper each, declared in the order they depend on one another. */
  private declareMember(name: string, args: ElasticMetalNodePoolArgs, member: NodeMember, ctx: MemberContext): ElasticMetalNodeOutput {
    const { cluster, pool } = args;
    const scope: MemberScope = {
      prefix: `${name}-${member.nodeId}`,
      args,
      member,
      ctx,
      nodeTags: [...ctx.poolTags, `${OWNERSHIP_LABELS.node}=${member.nodeId}`],
    };
    const rolloutGeneration = inPlaceRolloutGeneration(ctx);
    const drain = this.declareUpdateDrain(scope, rolloutGeneration);
    const { ip, privateAddress } = this.declarePrivateAddress(scope);
    // Named by generation: a replaced server (offer/OS/zone) gets a fresh token. A new token lives
    // through the install, the VLAN wait and the join (elasticMetalVlan.ts `elasticMetalTokenTtlMinutes`);
    // an existing one keeps its lifetime, and the members of the dynamic flavour keep the cluster's.
    const ttl =
      ctx.resources === "plugin-all" ? elasticMetalTokenTtlMinutes(cluster, this.vlanWaitSeconds) : cluster.bootstrapTokenTtlMinutes;
    const token = this.clusterSide.bootstrapToken(
      `${scope.prefix}-${ctx.generation}-token`,
      { ...cluster, bootstrapTokenTtlMinutes: ttl },
      member.hostname,
      ctx.resources,
      ctx.action !== "install",
    );
    const hostFirewall = hostFirewallOf(args);
    const renderJoin = joinScriptRenderer(cluster, member, hostFirewall);
    const cloudInit = ctx.method === "cloud-init" ? cloudInitJoin(member, token.token, privateAddress, renderJoin) : undefined;

    // Named by member, not generation: a replacement keeps it; removing the member deletes the Node.
    const nodeRemoval = this.clusterSide.nodeRemoval(member.hostname, ctx.resources);
    if (nodeRemoval) this.nodeRemovals.push(nodeRemoval);
    // The token Secret must exist before the node joins; the Node is deleted only after the server.
    const server = this.declareServer(scope, ip, cloudInit, [
      token.resource,
      ...(nodeRemoval ? [nodeRemoval] : []),
      ...(drain ? [drain] : []),
    ]);
    this.declareRemovalDrain(scope, server);
    const vlan = this.attachedVlan(member, server);
    const host = server.ipv4s.apply((ips) => ips?.[0]?.address ?? "");
    const { readHostKey, hostKey } = this.declareHostKeyRead(scope, server, host);
    const pinned = { host, hostKey, ...ctx.connection };
    const vlanDelivery = ctx.method === "cloud-init" ? this.declareVlanDelivery(scope, server, pinned, vlan, readHostKey) : undefined;
    const stdin = joinStdin(member, ctx.method, token.token, privateAddress, vlan, renderJoin);
    const joined = this.declareJoin(scope, server, pinned, stdin, [
      token.resource,
      readHostKey,
      ...(vlanDelivery ? [vlanDelivery] : []),
      ...(drain ? [drain] : []),
    ]);
    this.declareHostFirewallReload(scope, server, pinned, hostFirewall, joined);
    const repush =
      cluster.kind === "kubeadm" && ctx.kubeletConfigHash !== undefined
        ? this.declareKubeletConfigRepush(scope, server, pinned, ctx.kubeletConfigHash, joined)
        : undefined;
    this.declareNodeMetadata(scope, privateAddress, rolloutGeneration, [joined, ...(repush ? [repush] : [])]);
    if (pool.localStorageClass !== undefined) this.declareLocalPvcRemoval(scope, pool.localStorageClass, server);

    return {
      ...nodeOutputIdentity(member),
      bootstrap: ctx.method,
      generation: ctx.generation,
      joinInputs: ctx.joinInputs,
      serverId: server.id,
      ipv4: host.apply((h) => h || undefined),
      privateIpv4: privateAddress.apply((a) => a.ipv4),
      vlan,
      hostKey,
      ...(ctx.kubeletConfigHash !== undefined ? { kubeletConfigHash: ctx.kubeletConfigHash } : {}),
      memberResources: ctx.resources,
    };
  }

  /** Its turn in the rollout: the Node is drained before its server is replaced or its join re-runs. */
  private declareUpdateDrain(
    { args, member, ctx }: MemberScope,
    rolloutGeneration: string,
  ): KubernetesNodeUpdateDrain | NodeUpdateDrain | undefined {
    const drain =
      ctx.action === "update"
        ? this.clusterSide.updateDrain(member.hostname, rolloutGeneration, args.pool.rollout.drainTimeoutSeconds, ctx.resources)
        : undefined;
    if (drain) this.updateDrains.push(drain);
    return drain;
  }

  /** Scale-down: the Node is drained (PodDisruptionBudgets hold, bounded by `drainTimeoutSeconds`) before its server is deleted. */
  private declareRemovalDrain({ args, member, ctx }: MemberScope, server: scaleway.elasticmetal.Server): void {
    const drain = this.clusterSide.removalDrain(member.hostname, args.pool.rollout.drainTimeoutSeconds, ctx.resources, server);
    if (drain) this.removalDrains.push(drain);
  }

  /** The address is known before the server exists: it goes into the kubelet's --node-labels. */
  private declarePrivateAddress({ prefix, args, ctx, nodeTags }: MemberScope): {
    ip: scaleway.ipam.Ip;
    privateAddress: pulumi.Output<PrivateAddress>;
  } {
    const ip = new scaleway.ipam.Ip(
      `${prefix}-ip`,
      { region: ctx.region, sources: [{ privateNetworkId: this.privateNetworkId }], tags: nodeTags },
      // The provider ignores a source change; an address on another network is a new address.
      { parent: this, replaceOnChanges: [...IPAM_IP_REPLACE_ON_CHANGES] },
    );
    const privateAddress = pulumi
      .all([ip.address, ip.addressCidr])
      .apply(([address, addressCidr]) => privateAddressCidr(addressCidr || address, args.pool.privateNetwork.subnet));
    return { ip, privateAddress };
  }

  /** The server on the private network, replaced (never surged) when its offer, OS or zone changes. */
  private declareServer(
    { prefix, args, member, ctx, nodeTags }: MemberScope,
    ip: scaleway.ipam.Ip,
    cloudInit: pulumi.Output<string> | undefined,
    dependsOn: pulumi.Resource[],
  ): scaleway.elasticmetal.Server {
    const { pool } = args;
    // A retained member's server keeps what it was created with (the state's).
    const retained = ctx.action === "retain";
    const server = new scaleway.elasticmetal.Server(
      prefix,
      {
        name: member.hostname,
        hostname: member.hostname,
        zone: pool.zone,
        offer: ctx.offerId,
        os: ctx.osId,
        sshKeyIds: [...pool.sshKeyIds],
        options: [{ id: ctx.optionId }],
        privateNetworks: [{ id: this.privateNetworkId, ipamIpIds: [ip.id] }],
        ...(cloudInit !== undefined ? { cloudInit } : {}),
        tags: nodeTags,
      },
      {
        parent: this,
        dependsOn,
        replaceOnChanges: [...ELASTIC_METAL_REPLACE_ON_CHANGES],
        // The IPAM address is held by the old server until it is gone.
        deleteBeforeReplace: true,
        // A real install takes 30-60 minutes (elasticMetalVlan.ts `ELASTIC_METAL_SERVER_TIMEOUT_MINUTES`).
        customTimeouts: { ...ELASTIC_METAL_CUSTOM_TIMEOUTS },
        // A member at its wanted generation keeps the cloud-init it was installed with: it runs only
        // at install, and a label, taint or firewall change must not touch the server.
        ...(retained
          ? { ignoreChanges: [...RETAINED_ELASTIC_METAL_IGNORED_INPUTS] }
          : ctx.action === "keep"
            ? { ignoreChanges: ["cloudInit"] }
            : {}),
      },
    );
    this.servers.push(server);
    return server;
  }

  /**
   * The VLAN id of the pool's private network on the server, which the join needs for its interface:
   * the state's, else read live and, during `up`, waited for (bounded; elasticMetalVlan.ts `resolveVlan`).
   */
  private attachedVlan(member: NodeMember, server: scaleway.elasticmetal.Server): pulumi.Output<number | undefined> {
    return pulumi.all([server.id, server.zone, server.privateNetworks, this.privateNetworkId]).apply(([serverId, zone, attached, pnId]) =>
      resolveVlan({
        hostname: member.hostname,
        serverId,
        recorded: attachmentVlan(member.hostname, attached, pnId),
        readLive: async () => {
          const live = await scaleway.elasticmetal.getServer({ serverId, ...(zone ? { zone } : {}) }, { parent: this });
          return attachmentVlan(member.hostname, live.privateNetworks, pnId);
        },
        dryRun: pulumi.runtime.isDryRun(),
        waitSeconds: this.vlanWaitSeconds,
      }),
    );
  }

  /** Reads the server's host key once, so every later SSH command verifies it. */
  private declareHostKeyRead(
    { prefix, ctx }: MemberScope,
    server: scaleway.elasticmetal.Server,
    host: pulumi.Output<string>,
  ): { readHostKey: command.remote.Command; hostKey: pulumi.Output<string> } {
    // Trust on first use, once per server: every machine generation (offer, OS, zone) is a new
    // server id, and so a new read. The only connection without a pinned host key; later commands
    // verify it. Nothing else re-reads it (that would trust an unverified key again).
    const readHostKey = new command.remote.Command(
      `${prefix}-hostkey`,
      { connection: { host, ...ctx.connection }, create: READ_HOST_KEY_COMMAND, triggers: [server.id], logging: "stdout" },
      { parent: this, dependsOn: [server] },
    );
    // stdout is always a string from the provider; only a mock runtime without host-key outputs
    // leaves it undefined, and then the pin is a value ssh rejects: fail closed, never unverified.
    const hostKey = readHostKey.stdout.apply((stdout) => (stdout === undefined ? UNREAD_HOST_KEY : parseHostKeyLine(stdout)));
    return { readHostKey, hostKey };
  }

  /** The VLAN id, which the cloud-init copy of the script waits for. */
  private declareVlanDelivery(
    { prefix, member, ctx }: MemberScope,
    server: scaleway.elasticmetal.Server,
    pinned: PinnedConnection,
    vlan: pulumi.Output<number | undefined>,
    readHostKey: command.remote.Command,
  ): command.remote.Command {
    return new command.remote.Command(
      `${prefix}-vlan`,
      {
        connection: pinned,
        create: ctx.runScript,
        stdin: vlan.apply((vlanId) => renderVlanIdDelivery(knownVlan(member, vlanId))),
        triggers: [server.id],
        logging: "stderr",
      },
      { parent: this, dependsOn: [readHostKey] },
    );
  }

  /** The self-join over SSH, on both paths: a run reports success only once the node joined. */
  private declareJoin(
    { prefix, ctx }: MemberScope,
    server: scaleway.elasticmetal.Server,
    pinned: PinnedConnection,
    stdin: pulumi.Output<string>,
    dependsOn: pulumi.Resource[],
  ): command.remote.Command {
    // Re-run only on its triggers, a new server or changed join inputs (version, identity; paced by
    // the rollout): the idempotent script then upgrades k0s or the kubelet in place. A script changed
    // by labels, taints or firewall rules alone runs nothing: they reach the machine through the
    // host-firewall command and the Node metadata.
    return new command.remote.Command(
      `${prefix}-join`,
      {
        connection: pinned,
        create: ctx.runScript,
        stdin,
        update: RECORD_ONLY_UPDATE,
        triggers: [server.id, ctx.joinInputs],
        logging: "stderr",
      },
      {
        parent: this,
        dependsOn,
        ...scriptIgnoredUnlessRunning(ctx.action),
      },
    );
  }

  /** Firewall rule changes reach every running member at once (bootstrap/hostFirewallCommand.ts says why that is safe). */
  private declareHostFirewallReload(
    { prefix, ctx }: MemberScope,
    server: scaleway.elasticmetal.Server,
    pinned: PinnedConnection,
    hostFirewall: ReturnType<typeof hostFirewallOf>,
    joined: command.remote.Command,
  ): void {
    new command.remote.Command(
      `${prefix}-host-firewall`,
      hostFirewallCommandArgs({ connection: pinned, runScript: ctx.runScript, hostFirewall, machineId: server.id }),
      { parent: this, dependsOn: [joined] },
    );
  }

  /** kubeadm: the kubelet config and CA re-pushed to the running node, restarting the kubelet when they changed. */
  private declareKubeletConfigRepush(
    { prefix, args, member, ctx }: MemberScope,
    server: scaleway.elasticmetal.Server,
    pinned: PinnedConnection,
    configHash: string,
    joined: command.remote.Command,
  ): command.remote.Command {
    const kubeletConfig = renderKubeletConfig({ kubelet: args.cluster.kubelet, providerID: member.providerID });
    // Paced like a re-join (its hash is part of the rollout generation): a kubelet
    // restart re-admits the running pods against the new config, and upstream warns that not every
    // kubelet setting is safe to change on a live node (kubernetes.io "Reconfigure a Node's Kubelet
    // in a Live Cluster"), so the member is drained first and uncordoned only after the re-push.
    // Only its trigger, a new server or config (a retained member keeps its previous one), runs it.
    return new command.remote.Command(
      `${prefix}-kubelet-config`,
      {
        connection: pinned,
        create: ctx.runScript,
        stdin: renderKubeletConfigRepush({ hostname: member.hostname, caCertificate: args.cluster.caCertificate, kubeletConfig }),
        update: RECORD_ONLY_UPDATE,
        triggers: [server.id, configHash],
        logging: "stderr",
      },
      { parent: this, dependsOn: [joined], ...scriptIgnoredUnlessRunning(ctx.action) },
    );
  }

  /** The kubelet applies labels and taints only at registration: the Node's are kept current through the API. */
  private declareNodeMetadata(
    { prefix, member, ctx }: MemberScope,
    privateAddress: pulumi.Output<PrivateAddress>,
    rolloutGeneration: string,
    dependsOn: pulumi.Resource[],
  ): void {
    this.clusterSide.nodeMetadata(
      `${prefix}-node-metadata`,
      {
        nodeName: member.hostname,
        labels: { ...member.labels, [PRIVATE_IPV4_LABEL]: privateAddress.apply((a) => a.ipv4) },
        taints: member.taints,
        // A moved generation also uncordons the drained Node, once its join and re-push ran.
        generation: rolloutGeneration,
      },
      ctx.resources,
      dependsOn,
    );
  }

  /** With `localStorageClass`, removing or replacing the server deletes the PVCs bound to its local PVs. */
  private declareLocalPvcRemoval({ prefix, member, ctx }: MemberScope, storageClass: string, server: scaleway.elasticmetal.Server): void {
    // Depends on the server, so it is deleted (and reaps the claims) before the server goes.
    this.clusterSide.localPvcRemoval(
      `${prefix}-local-pvcs`,
      { nodeName: member.hostname, storageClass, serverId: server.id },
      ctx.resources,
      server,
    );
  }
}
