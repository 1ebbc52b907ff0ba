/**
 * What a claim keeps of its member (`Claim.snapshot`, the claims table's snapshot_json): the pool
 * template it was admitted with and what admission chose. The store owns these types since it
 * stores them; admission builds them (api/clusterService.ts), reconciler/memberSnapshot.ts derives
 * templates, hashes and drift, and stacks/autoscaledProgram.ts renders members from them.
 */
import type { ClusterSpec, KubeletSettings, Taint } from "../../components/fleet/fleetSpec";
import type { NodeResources } from "../../components/bootstrap/kubeletReservations";
import type { HcloudArchitecture } from "../../components/fleet/poolImages";

/** Everything of a pool and its cluster that shapes a member's server and bootstrap. */
export interface PoolTemplate {
  readonly pool: string;
  readonly location: string;
  readonly serverTypes: readonly string[];
  readonly image: string;
  /**
   * For a pool with `imageSelector`: the image id each architecture's members boot, as the scaling
   * API resolved the selector (catalog/poolImageResolution.ts); a member's image is its type's
   * architecture's (reconciler/memberSnapshot.ts memberImage). Absent for a pool with `image`.
   */
  readonly imagesByArchitecture?: Readonly<Partial<Record<HcloudArchitecture, string>>>;
  readonly sshKeys: readonly string[];
  readonly deleteProtection: boolean;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly clusterKind: ClusterSpec["kind"];
  readonly k0sVersion?: string;
  readonly kubernetesVersion?: string;
  readonly kubelet: KubeletSettings;
  /** `public` for a pool whose servers join no Hetzner network; absent: the private network (as before the setting existed). */
  readonly network?: "public";
  /** `none` for a pool whose servers go to no spread placement group; absent: spread. */
  readonly placement?: "none";
  /**
   * A spread pool over several locations: its locations, `location` first (its groups keep the
   * one-location names `pg-<n>`, the others' are `pg-<location>-<n>`), so each location has spread
   * groups of its own. Absent for one location or `placement: none` (as before the setting existed).
   * Not part of a member's drift: adding a location moves no running member.
   */
  readonly locations?: readonly string[];
  /** `false` for a pool whose servers get no public IPv4 (they route through the NAT gateway); absent: true. */
  readonly publicIpv4?: false;
  /** `false` for a pool whose servers get no public IPv6; absent: true. */
  readonly publicIpv6?: false;
  /**
   * `hcloud` when the cluster's `hcloudProviderIds` was: the member's Node registers `hcloud://<server
   * id>`, read at boot. Absent: `<scheme>:///<cluster>/<node id>` (as before the setting existed).
   */
  readonly providerIds?: "hcloud";
}

/** What a claim freezes at admission. */
export interface MemberSnapshot {
  readonly template: PoolTemplate;
  readonly serverType: string;
  /** kubernetes.io/arch of the server type (absent in claims admitted before it was recorded). */
  readonly arch?: "amd64" | "arm64";
  readonly location: string;
  /** Labels from the request (Karpenter's NodeClaim labels), all of them, as the node object reports them. */
  readonly requestLabels: Readonly<Record<string, string>>;
  /** The part of requestLabels the kubelet accepts at registration; restricted ones are left to Karpenter. */
  readonly kubeletLabels: Readonly<Record<string, string>>;
  readonly requestTaints: readonly Taint[];
  readonly capacity: NodeResources;
  readonly allocatable: NodeResources;
  /** templateHash(template, serverType) at admission. */
  readonly templateHash: string;
  /**
   * Smallest slot free in the pool at admission, kept for the member's lifetime: the server goes to
   * spread placement group floor(slot / 10) and never has to move between groups.
   */
  readonly placementSlot: number;
  /**
   * `random-password` for claims admitted since bootstrap token secrets left resource ids; absent in
   * older claims, whose RandomString token (in clear in the API stack's state) is kept while they
   * live, since changing it could break a join still under way (docs/security.md).
   */
  readonly bootstrapTokenSecret?: "random-password";
  /**
   * `plugin` for claims admitted since members' drain, Node removal and token moved to nodefleet's
   * provider plugin; absent in older claims, whose members keep their dynamic resources until they
   * leave (components/fleet/memberResources.ts).
   */
  readonly memberResources?: "plugin";
  /**
   * The API stack the member lives in (reconciler/apiShard.ts), chosen at admission and kept for
   * its lifetime; absent in claims admitted before shards, which stay in shard 0.
   */
  readonly shard?: string;
}
