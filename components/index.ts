/**
 * `nodefleet:index:Fleet`: everything the git-owned stack declares for one cluster: the Hetzner
 * network and firewall, the Kubernetes provider that mints bootstrap tokens, and one pool component
 * per static pool. Autoscaled pools declare no members here: the scaling API owns their membership
 * in a stack of its own, so a `pulumi up` from git can never delete API-created nodes.
 *
 * This file is the package's entry point (package.json `main`) and the only module that composes
 * the provider folders (hcloud/, scaleway/, robot/); each folder's README.md says what it may import.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { apiMembersGuard } from "./hcloud/apiMembersGuard";
import { ClusterFirewall } from "./hcloud/clusterFirewall";
import { ClusterNetwork } from "./hcloud/clusterNetwork";
import type { FleetSpec } from "./fleet/fleetSpec";
import { type ElasticMetalNodeOutput, ElasticMetalNodePool } from "./scaleway/elasticMetalNodePool";
import { type CurrentHcloudServer, type HcloudNodeOutput, type HcloudPoolRolloutSummary, HcloudNodePool } from "./hcloud/hcloudNodePool";
import { type RobotNodeOutput, RobotNodePool } from "./robot/robotNodePool";
import type { CurrentInPlaceMember } from "./fleet/inPlaceMembers";
import type { CurrentElasticMetalMember } from "./scaleway/elasticMetalPlan";
import type { InPlaceRolloutSummary } from "./fleet/rolloutPlan";
import { staticHcloudMembers } from "./hcloud/hcloudServerPlan";
import { serversOutsidePool } from "./fleet/networkOccupancy";
import type { PoolImages } from "./fleet/poolImages";
import { withoutSourcePositions } from "./shared/withoutSourcePositions";

export interface FleetArgs {
  /** The parsed stack config (`parseFleetSpec`); `cluster.kubeconfig` is ignored, pass it as `kubeconfig`. */
  readonly spec: FleetSpec;
  /**
   * Kubeconfig allowed to create bootstrap-token Secrets in kube-system and delete Nodes; keep it secret. Absent only
   * for render and simulation (mock runtime): the provider is then declared with an empty kubeconfig.
   */
  readonly kubeconfig?: pulumi.Input<string>;
  /**
   * Per static Hetzner Cloud pool name, its servers at the start of this run (previous `nodes`
   * output plus Node readiness, see hcloud/hcloudNodePool.ts `currentHcloudServers`): what the
   * rollout of a fleet-wide change starts from. Default none: pools are declared as new.
   */
  readonly currentHcloudServers?: Readonly<Record<string, readonly CurrentHcloudServer[]>>;
  /**
   * Per static Hetzner Cloud pool with `imageSelector`, the image id per architecture this run's
   * look-ups resolved (fleet/poolImages.ts, stacks/fleetProgram.ts). Required for such a pool.
   */
  readonly hcloudImages?: PoolImages;
  /**
   * Static Hetzner Cloud pools whose servers an earlier nodefleet recorded without rollouts (so no
   * current servers are known): their bootstrap tokens are that nodefleet's RandomStrings and are
   * kept as they are for this run; the next run knows the servers and moves joined ones to
   * RandomPasswords. Default none.
   */
  readonly earlierTokenPools?: readonly string[];
  /**
   * Per Hetzner Robot pool name, its members at the start of this run (previous `nodes` output plus
   * Node readiness, see fleet/inPlaceMembers.ts `currentInPlaceMembers`): what its rollout starts from.
   * Default none: every member is declared at its wanted generation.
   */
  readonly currentRobotMembers?: Readonly<Record<string, readonly CurrentInPlaceMember[]>>;
  /** Per Elastic Metal pool name, its members at the start of this run (see scaleway/elasticMetalPlan.ts `currentElasticMetalMembers`). Default none. */
  readonly currentElasticMetalMembers?: Readonly<Record<string, readonly CurrentElasticMetalMember[]>>;
  /**
   * Bare-metal pools whose members an earlier nodefleet recorded without rollouts (so none are
   * current): their members keep the `pulumi.dynamic` resources they were created with
   * (fleet/memberResources.ts). Default none.
   */
  readonly unrecordedBareMetalPools?: readonly string[];
}

export class Fleet extends pulumi.ComponentResource {
  readonly network: ClusterNetwork;
  readonly firewall: ClusterFirewall;
  readonly kubernetesProvider: k8s.Provider;
  readonly hcloudPools: HcloudNodePool[] = [];
  readonly elasticMetalPools: ElasticMetalNodePool[] = [];
  readonly robotPools: RobotNodePool[] = [];
  /** Every static member: the Hetzner Cloud pools' first, then the Elastic Metal pools', then the Robot pools', each in pool order. */
  readonly nodes: pulumi.Output<pulumi.Unwrap<HcloudNodeOutput | ElasticMetalNodeOutput | RobotNodeOutput>[]>;
  readonly networkId: pulumi.Output<number>;
  readonly firewallId: pulumi.Output<number>;
  /** Each static pool's rollout step of this run: the Hetzner Cloud pools', then the bare-metal pools'. */
  readonly rollout: Array<HcloudPoolRolloutSummary | InPlaceRolloutSummary>;

  constructor(name: string, args: FleetArgs, opts?: pulumi.ComponentResourceOptions) {
    super("nodefleet:index:Fleet", name, {}, opts);
    const { kubeconfig: _ignored, ...cluster } = args.spec.cluster;
    this.network = new ClusterNetwork(`${name}-network`, { cluster, network: args.spec.network }, { parent: this });
    this.firewall = new ClusterFirewall(`${name}-firewall`, { cluster, firewall: args.spec.firewall }, { parent: this });
    this.kubernetesProvider = new k8s.Provider(
      `${name}-kubernetes`,
      { kubeconfig: args.kubeconfig === undefined ? "" : pulumi.secret(args.kubeconfig) },
      { parent: this },
    );
    this.networkId = this.network.networkId;
    this.firewallId = this.firewall.firewallId;
    // The scaling API's servers use this network and firewall: a teardown stops while any exist.
    const staticPools = args.spec.pools.filter((p) => p.provider === "hcloud" && p.mode === "static").map((p) => p.name);
    apiMembersGuard(
      `${name}-api-members-guard`,
      { cluster, staticPools, firewall: this.firewall.firewall, network: this.network.network, subnet: this.network.subnet },
      { parent: this },
    );

    // Every pool gets the same Node-removal credentials and the fleet's Kubernetes provider.
    const credentials = args.kubeconfig !== undefined ? { kubeconfig: pulumi.secret(args.kubeconfig) } : {};
    const poolOptions = { parent: this, providers: [this.kubernetesProvider] };
    for (const pool of args.spec.pools) {
      if (pool.provider === "hcloud" && pool.mode === "static") {
        this.hcloudPools.push(
          withoutSourcePositions(
            () =>
              new HcloudNodePool(
                `${name}-${pool.name}`,
                {
                  cluster,
                  pool,
                  members: args.earlierTokenPools?.includes(pool.name)
                    ? staticHcloudMembers(cluster, pool, args.currentHcloudServers?.[pool.name], args.hcloudImages?.[pool.name]).map(
                        (member) => ({
                          ...member,
                          bootstrapTokenSecret: "random-string" as const,
                          memberResources: "dynamic" as const,
                        }),
                      )
                    : staticHcloudMembers(cluster, pool, args.currentHcloudServers?.[pool.name], args.hcloudImages?.[pool.name]),
                  networkId: this.networkId,
                  subnet: this.network.subnet,
                  privateSubnet: args.spec.network.subnet,
                  privateNetworkRange: args.spec.network.ipRange,
                  ...(this.network.natRoute ? { natRoute: this.network.natRoute } : {}),
                  firewallIds: [this.firewallId],
                  rollout: pool.rollout,
                  drainTimeoutSeconds: pool.rollout.drainTimeoutSeconds,
                  ...(args.currentHcloudServers?.[pool.name] ? { current: args.currentHcloudServers[pool.name] } : {}),
                  serversOutsidePool: serversOutsidePool(args.spec.pools, args.currentHcloudServers ?? {}, pool.name),
                  ...credentials,
                },
                poolOptions,
              ),
          ),
        );
      }
      if (pool.provider === "scaleway-elastic-metal") {
        this.elasticMetalPools.push(
          withoutSourcePositions(
            () =>
              new ElasticMetalNodePool(
                `${name}-${pool.name}`,
                {
                  cluster,
                  pool,
                  firewall: args.spec.firewall,
                  ...(args.currentElasticMetalMembers?.[pool.name] ? { current: args.currentElasticMetalMembers[pool.name] } : {}),
                  ...(args.unrecordedBareMetalPools?.includes(pool.name) ? { unrecordedMemberResources: "dynamic" as const } : {}),
                  ...credentials,
                },
                poolOptions,
              ),
          ),
        );
      }
      if (pool.provider === "hetzner-robot") {
        this.robotPools.push(
          withoutSourcePositions(
            () =>
              new RobotNodePool(
                `${name}-${pool.name}`,
                {
                  cluster,
                  pool,
                  firewall: args.spec.firewall,
                  ...(args.currentRobotMembers?.[pool.name] ? { current: args.currentRobotMembers[pool.name] } : {}),
                  ...(args.unrecordedBareMetalPools?.includes(pool.name) ? { unrecordedMemberResources: "dynamic" as const } : {}),
                  ...credentials,
                },
                poolOptions,
              ),
          ),
        );
      }
      // Autoscaled hcloud pools: members come from the scaling API's own stack.
    }

    this.nodes = pulumi.output([
      ...this.hcloudPools.flatMap((p) => p.nodes),
      ...this.elasticMetalPools.flatMap((p) => p.nodes),
      ...this.robotPools.flatMap((p) => p.nodes),
    ]) as pulumi.Output<pulumi.Unwrap<HcloudNodeOutput | ElasticMetalNodeOutput | RobotNodeOutput>[]>;
    this.rollout = [
      ...this.hcloudPools.map((p) => p.rolloutSummary),
      ...this.elasticMetalPools.map((p) => p.rolloutSummary),
      ...this.robotPools.map((p) => p.rolloutSummary),
    ];
    this.registerOutputs({ nodes: this.nodes, networkId: this.networkId, firewallId: this.firewallId, rollout: this.rollout });
  }
}
