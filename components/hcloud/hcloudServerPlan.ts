/**
 * The pure part of a Hetzner Cloud pool: members (static pools from the spec; autoscaled ones from
 * the scaling API's snapshots), their defaults, generation suffix, server name and placement slot.
 * Needs no Pulumi runtime.
 */
import type { MemberResources } from "../fleet/memberResources";
import type { ClusterSpec, HcloudPool, HcloudStaticPool, Taint } from "../fleet/fleetSpec";
import { generationServerName, generationSuffix } from "../fleet/generationSuffix";
import { hcloudMemberProviderId, staticNodeIds } from "../fleet/naming";
import { mergeTaints } from "../fleet/taints";
import { type NodeMember, nodeMember } from "../fleet/nodeMember";
import type { BootstrapTokenSecretSource } from "../kubernetes/bootstrapToken";
import { assertHcloudUserDataSize } from "../bootstrap/userDataLimits";
import { renderWorkerUserData } from "../bootstrap/workerUserData";
import { type WorkerCluster, type WorkerMemberInput, workerUserDataInputs } from "../bootstrap/workerUserDataInputs";
import { networkGateway } from "../fleet/privateEgress";
import { spreadAcrossLocations } from "../fleet/locationSpread";
import { type HcloudArchitecture, serverTypeArchitecture } from "../fleet/poolImages";

/** Cluster-side values a member may pin (a frozen snapshot) instead of taking the cluster's current ones. */
export type MemberBootstrapSnapshot = Partial<Pick<ClusterSpec, "k0sVersion" | "k0sSha256" | "kubernetesVersion" | "kubelet">>;

/** One server of the pool: who the node is, and everything needed to render its server and bootstrap. */
export interface HcloudPoolMember extends NodeMember {
  /** Image name or id. Default: the pool's `image`. Changing it replaces the server (new generation). */
  readonly image?: string;
  /** Hetzner SSH key names or ids. Default: the pool's `sshKeys`. Changing them replaces the server. */
  readonly sshKeys?: readonly string[];
  /**
   * Placement slot, a non-negative integer unique in the pool; the server goes to spread group
   * floor(slot / 10). Keep it for the member's lifetime so the server never changes group (that
   * needs it powered off). Default: the member's position in `members`.
   */
  readonly placementSlot?: number;
  /**
   * `public`: the server joins no Hetzner network (the pool's `network`; an autoscaled member's as
   * admitted). Default: the pool template's `network`, else private.
   */
  readonly network?: "private" | "public";
  /** `none`: the server goes to no spread placement group. Default: the pool template's `placement`, else spread. */
  readonly placement?: "spread" | "none";
  /** false: no public IPv4; the node routes through the network's NAT gateway. Default: the pool template's `publicIpv4`, else true. */
  readonly publicIpv4?: boolean;
  /** false: no public IPv6. Default: the pool template's `publicIpv6`, else true. */
  readonly publicIpv6?: boolean;
  /** Taints added at registration on top of `taints`, e.g. `karpenter.sh/unregistered:NoExecute`. Default: none. */
  readonly extraTaints?: readonly Taint[];
  /** Versions and kubelet settings frozen for this member. Default: the cluster's current values. */
  readonly bootstrap?: MemberBootstrapSnapshot;
  /**
   * Where this member's bootstrap token secret comes from when the pool is given no current servers
   * (`random-string` only for a member whose token an earlier nodefleet made). Default `random-password`.
   */
  readonly bootstrapTokenSecret?: BootstrapTokenSecretSource;
  /**
   * The resources of its drain, Node removal and token when the pool is given no current servers
   * (see fleet/memberResources.ts): what its snapshot recorded. Default `plugin` (a new member).
   */
  readonly memberResources?: MemberResources;
}

/** The pool template fields the component reads. A parsed `HcloudPool` fits. */
export type HcloudPoolTemplate = Pick<HcloudPool, "name" | "image"> &
  Partial<
    Pick<HcloudPool, "sshKeys" | "deleteProtection" | "network" | "placement" | "publicIpv4" | "publicIpv6" | "location" | "locations">
  >;

/** The cluster a pool renders for (the kubeconfig is never needed here). */
export type HcloudPoolCluster = Omit<ClusterSpec, "kubeconfig">;

/**
 * The members of a static pool: `staticNodeIds` order, the pool's first server type, slot = position
 * among the members of its location.
 * With `locations`, each member's location follows fleet/locationSpread.ts from where `current`
 * (the previous run's servers) put it; with `location`, every member is there, as before.
 * With `imageSelector`, `images` (fleet/poolImages.ts) gives the image of each architecture, and a
 * member boots the one of its server type's; a new snapshot so makes a new generation.
 */
export function staticHcloudMembers(
  cluster: Pick<ClusterSpec, "id" | "providerIdScheme" | "hcloudProviderIds">,
  pool: HcloudStaticPool,
  current: ReadonlyArray<{ readonly nodeId: string; readonly location: string }> = [],
  images?: Partial<Record<HcloudArchitecture, string>>,
): HcloudPoolMember[] {
  const template = {
    pool: pool.name,
    serverType: pool.serverTypes[0],
    location: pool.location,
    labels: pool.labels,
    taints: pool.taints,
  };
  const nodeIds = staticNodeIds(pool);
  const where = spreadAcrossLocations({ nodeIds, locations: pool.locations ?? [pool.location], current });
  // Slots count per location (each location has its own spread groups); one location: the position, as before.
  const seenIn = new Map<string, number>();
  const slotOf = (nodeId: string) => {
    const location = where.get(nodeId)!;
    const slot = seenIn.get(location) ?? 0;
    seenIn.set(location, slot + 1);
    return slot;
  };
  return nodeIds.map((nodeId) => ({
    ...nodeMember(cluster, { ...template, location: where.get(nodeId)! }, nodeId),
    providerID: hcloudMemberProviderId(cluster, nodeId),
    image: memberImage(pool, template.serverType, images),
    sshKeys: pool.sshKeys,
    network: pool.network,
    placement: pool.placement,
    publicIpv4: pool.publicIpv4,
    publicIpv6: pool.publicIpv6,
    placementSlot: slotOf(nodeId),
  }));
}

/** A member's image: with `imageSelector`, the resolved one of its type's architecture (a pool without it was refused at preview). */
function memberImage(pool: HcloudStaticPool, serverType: string, images: Partial<Record<HcloudArchitecture, string>> | undefined): string {
  if (pool.imageSelector === undefined) return pool.image;
  const image = images?.[serverTypeArchitecture(serverType)];
  if (image === undefined)
    throw new Error(
      `pool ${pool.name}: imageSelector ${JSON.stringify(pool.imageSelector)} was not resolved for server type ${serverType}`,
    );
  return image;
}

/** A syntactically valid token with the real length, to check the user data size before any resource exists. */
const SIZE_CHECK_TOKEN = "abcdef.0123456789abcdef";

/** Everything about a member that is decided without the Pulumi runtime. */
export interface PlannedHcloudServer {
  readonly member: HcloudPoolMember;
  readonly cluster: WorkerCluster & Pick<ClusterSpec, "bootstrapTokenTtlMinutes">;
  /** What the user data is rendered from; its `hostname` is `nodeName`. */
  readonly render: WorkerMemberInput;
  readonly image: string;
  readonly sshKeys: readonly string[];
  /** Whether the server joins the cluster's Hetzner network (`network` private). */
  readonly privateNetwork: boolean;
  /** Whether the server goes to its slot's spread placement group (`placement` spread). */
  readonly spread: boolean;
  /** Whether the server gets a public IPv4 and a public IPv6 (Server `publicNets`). */
  readonly publicNet: { readonly ipv4: boolean; readonly ipv6: boolean };
  readonly generation: string;
  /** `<hostname>-<generation>`, the Hetzner server name. */
  readonly serverName: string;
  /**
   * The Kubernetes Node name, machine hostname and `--hostname-override`: the server name. Unique
   * per generation, because the new server runs next to the old one during a replacement and two
   * kubelets must never share one Node object.
   */
  readonly nodeName: string;
  readonly placementSlot: number;
}

/**
 * Resolves defaults and the generation of every member; throws, naming the node, on any problem.
 * With `privateSubnet` (the cluster network's subnet) and `cluster.nodeAddress` private, the kubelet
 * registers the server's address in that subnet as its InternalIP (found at boot: Hetzner assigns
 * it after the user data is fixed); without `privateSubnet`, a member without public IPv4 does so in
 * `networkRange`. A member with `network: public` joins no network and keeps the
 * kubelet's default, its public address; it needs `cluster.nodeAddress: public` (the spec checks it).
 */
export function planHcloudServers(
  cluster: HcloudPoolCluster,
  pool: HcloudPoolTemplate,
  members: readonly HcloudPoolMember[],
  privateSubnet?: string,
  networkRange?: string,
): PlannedHcloudServer[] {
  const nodeIp = privateSubnet !== undefined && cluster.nodeAddress !== "public" ? { subnet: privateSubnet } : undefined;
  const seen = new Set<string>();
  return members.map((member, index) => {
    if (seen.has(member.nodeId)) throw new Error(`pool ${pool.name}: node ${member.nodeId} is listed twice`);
    seen.add(member.nodeId);
    const network = member.network ?? pool.network ?? "private";
    const placement = member.placement ?? pool.placement ?? "spread";
    if (network === "public" && cluster.nodeAddress !== "public") {
      throw new Error(
        `pool ${pool.name}: node ${member.nodeId} has network public, which needs cluster.nodeAddress public (it has no private address to register)`,
      );
    }
    const publicIpv4 = member.publicIpv4 ?? pool.publicIpv4 ?? true;
    const publicIpv6 = member.publicIpv6 ?? pool.publicIpv6 ?? true;
    if (!publicIpv4 && (network === "public" || networkRange === undefined)) {
      throw new Error(
        network === "public"
          ? `pool ${pool.name}: node ${member.nodeId} has neither a public IPv4 nor the private network (publicIpv4 false needs network private)`
          : `pool ${pool.name}: node ${member.nodeId} has no public IPv4, so it needs the network's range to route through its NAT gateway`,
      );
    }
    const memberCluster = { ...cluster, ...member.bootstrap };
    // The generation is hashed from the user-data inputs with the member's base hostname: the
    // rendered name contains the generation, so hashing it would be circular.
    const baseRender = {
      hostname: member.hostname,
      providerID: member.providerID,
      labels: member.labels,
      taints: mergeTaints(member.taints, member.extraTaints ?? []),
      ...(nodeIp && network === "private"
        ? { nodeIp }
        : // Without public IPv4 the private address is the Node's only one; the scaling API's stack
          // names no subnet (its members keep their user data), so it waits for one in the network's range.
          !publicIpv4 && networkRange !== undefined && cluster.nodeAddress !== "public"
          ? { nodeIp: { subnet: networkRange } }
          : {}),
      // Without public IPv4 the default route leaves through the network's gateway to the NAT server.
      ...(!publicIpv4 && networkRange !== undefined ? { privateEgress: { gateway: networkGateway(networkRange), networkRange } } : {}),
    };
    const image = member.image ?? pool.image;
    const sshKeys = [...(member.sshKeys ?? pool.sshKeys ?? [])];
    const generation = generationSuffix({
      location: member.location,
      image,
      serverType: member.serverType,
      sshKeys,
      userData: workerUserDataInputs(memberCluster, baseRender),
      network,
      placement,
      publicIpv4,
      publicIpv6,
    });
    const serverName = generationServerName(member.hostname, generation);
    const render = { ...baseRender, hostname: serverName };
    // The real token has the same length, so the size is known before anything is created.
    assertHcloudUserDataSize(member.hostname, renderWorkerUserData(memberCluster, render, SIZE_CHECK_TOKEN));
    return {
      member,
      cluster: memberCluster,
      render,
      image,
      sshKeys,
      privateNetwork: network === "private",
      spread: placement === "spread",
      publicNet: { ipv4: publicIpv4, ipv6: publicIpv6 },
      generation,
      serverName,
      nodeName: serverName,
      placementSlot: member.placementSlot ?? index,
    };
  });
}
