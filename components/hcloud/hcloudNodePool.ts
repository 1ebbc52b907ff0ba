/**
 * A pool of Hetzner Cloud workers: per member a bootstrap token, the rendered user data and one
 * Server (ownership labels, private network, cluster firewall from first boot, spread placement
 * group). Members are given explicitly so that the git-owned program (static pools, see
 * hcloudServerPlan.ts `staticHcloudMembers`) and the scaling API's stack (autoscaled members rendered from their frozen
 * snapshots) declare servers the same way.
 */
import * as hcloud from "@pulumi/hcloud";
import * as pulumi from "@pulumi/pulumi";
import {
  type BootstrapTokenArgs,
  type BootstrapTokenSecretSource,
  bootstrapTokenJoinMargin,
  joinWindow,
  nodeBootstrapToken,
} from "../kubernetes/bootstrapToken";
import {
  type HcloudPoolCluster,
  type HcloudPoolMember,
  type HcloudPoolTemplate,
  type PlannedHcloudServer,
  planHcloudServers,
} from "./hcloudServerPlan";
import { type NodeOutput, OWNERSHIP_LABELS, nodeOutputIdentity } from "../fleet/nodeMember";
import { type KubernetesNodeRemoval, memberNodeRemoval } from "../kubernetes/kubernetesNodeRemoval";
import { type CurrentRolloutServer, DEFAULT_ROLLOUT, type RolloutPlan, type RolloutSettings, planRollout } from "../fleet/rolloutPlan";
import { generationServerName } from "../fleet/generationSuffix";
import { hcloudMemberProviderId, hcloudProviderId, hostnameFor } from "../fleet/naming";
import { type KubernetesNodeDrain, memberNodeDrain } from "../kubernetes/kubernetesNodeDrain";
import { assertHcloudUserDataSize } from "../bootstrap/userDataLimits";
import { type MemberResources, NEW_MEMBER_RESOURCES, recordedMemberResources } from "../fleet/memberResources";
import { ClusterAccessProvider } from "../provider/clusterAccessProvider";
import { NodeBootstrapToken, nodeBootstrapTokenArgs } from "../provider/bootstrapTokenResource";
import { NodeDrain } from "../provider/nodeDrainResource";
import { NodeRemoval } from "../provider/nodeRemovalResource";
import { DEFAULT_DRAIN_TIMEOUT_SECONDS } from "../fleet/rolloutPlan";
import { renderWorkerUserData } from "../bootstrap/workerUserData";
import { providerIdFromMetadata } from "../bootstrap/hcloudServerId";

export interface HcloudNodePoolArgs {
  /** The cluster the nodes join: id (names, labels), kind (bootstrap flavour), API server, CA, versions, kubelet, token TTL. */
  readonly cluster: HcloudPoolCluster;
  /**
   * The pool template: `name` (labels and placement group names), `image` (default for members),
   * `sshKeys` (default for members, default none), `deleteProtection` (Hetzner delete and rebuild
   * protection on every server, always set equal as Hetzner requires; default false. A protected
   * server may refuse deletion, so turn it off before removing or replacing members).
   */
  readonly pool: HcloudPoolTemplate;
  /** The pool's members, one server each; may be empty. Node ids and placement slots must be unique. */
  readonly members: readonly HcloudPoolMember[];
  /** Id of the cluster's Hetzner network (a number, possibly from a look-up); every server on the private network (`network` private) joins it. */
  readonly networkId: pulumi.Input<number>;
  /** The subnet servers get their private address from; when given, servers wait for it. Default: none (it exists already). */
  readonly subnet?: pulumi.Resource;
  /**
   * The network's route to the NAT gateway (clusterNetwork.ts); when given, servers wait for it, so
   * a node without public IPv4 never boots before its way out exists. Default: none.
   */
  readonly natRoute?: pulumi.Resource;
  /**
   * The cluster network's subnet (`nodefleet:network.subnet`). When given, and the cluster's
   * nodeAddress is private, kubelets register their address in it as InternalIP. Default: none (the
   * kubelet's choice, the public address); the scaling API's stack leaves it out so that running
   * autoscaled members, rendered from frozen snapshots, keep their user data.
   */
  readonly privateSubnet?: string;
  /**
   * The cluster network's range (`nodefleet:network.ipRange`): members without public IPv4 route
   * their default via its gateway (fleet/privateEgress.ts). Required when a member has `publicIpv4`
   * false. Default: none.
   */
  readonly privateNetworkRange?: string;
  /** Firewalls applied at server creation (`Server.firewallIds`), so they filter from the first boot. */
  readonly firewallIds: pulumi.Input<number>[];
  /**
   * Kubeconfig allowed to delete Nodes (token or client-certificate user); a secret. When given, each
   * server generation gets a KubernetesNodeRemoval, so removing the member, or replacing its server,
   * deletes that generation's Node after its server.
   * Default: none (render, simulation); Nodes of removed members then stay until deleted by hand.
   */
  readonly kubeconfig?: pulumi.Input<string>;
  /**
   * How fast a fleet-wide change (version, image, server type, labels: anything that makes a new
   * server generation) rolls: `maxSurge` servers above the member count, `maxUnavailable` members
   * without a Ready server. Default `{ maxSurge: 1, maxUnavailable: 0 }` (one at a time, never a
   * member down, like a MachineDeployment). A rollout takes several `pulumi up` runs; each moves it
   * one step (see fleet/rolloutPlan.ts).
   */
  readonly rollout?: RolloutSettings;
  /**
   * The pool's servers at the start of this run: the previous run's `nodes` (generation, spread group,
   * delete protection) with each Node's readiness from the cluster (see `currentHcloudServers`).
   * Default none: every member is created at its wanted generation, as for a new pool (a member whose
   * server runs under another generation is then replaced all at once; give the servers to roll), and
   * bootstrap tokens keep their old behaviour. With it, a server to create gets a token renewed within
   * the join margin, a running one keeps its token, and a registered Node's token Secret is deleted.
   */
  readonly current?: readonly CurrentHcloudServer[];
  /** Servers on the same Hetzner network that are not this pool's (the network holds 100; a `network: public` pool is not held to it). Default 0. */
  readonly serversOutsidePool?: number;
  /**
   * Whether the rollout holds the pool's servers plus `serversOutsidePool` to the network's 100.
   * Default: true for a pool on the private network, false for `network: public`. The scaling API's
   * stack passes false: admission already held its members to the cap, and a member the rollout
   * left out would be deleted.
   */
  readonly networkLimit?: boolean;
  /**
   * How long removing a server may wait for its Node's pods to be evicted (PodDisruptionBudgets can
   * hold an eviction back) before the removal fails and stops the run. Default 600 seconds.
   */
  readonly drainTimeoutSeconds?: number;
  /**
   * The time of this run (ms since the epoch), when bootstrap tokens of servers to create are checked
   * against `cluster.bootstrapTokenJoinMarginMinutes`. Default: now. Only used with `current`.
   */
  readonly now?: number;
}

/** A server of the pool at the start of a run, as the previous run reported it plus its Node's readiness. */
export interface CurrentHcloudServer extends CurrentRolloutServer {
  /** Its server type (kept while it runs; the new generation brings the new one). */
  readonly serverType: string;
  /** Its location (a running server never moves). */
  readonly location: string;
  /** Where its bootstrap token secret comes from, as recorded. Default `random-string` (servers created before it was recorded). */
  readonly bootstrapTokenSecret?: BootstrapTokenSecretSource;
  /** The resources of its drain, Node removal and token, as recorded. Default `dynamic` (servers created before it was recorded). */
  readonly memberResources?: MemberResources;
}

/**
 * What the pool reports per node: the common node output plus the Hetzner server name, the
 * Kubernetes Node name and the generation. `hostname` is the member's base name
 * `<clusterId>-<nodeId>` (stable across generations); the machine and its Node are named `nodeName`.
 */
export interface HcloudNodeOutput extends NodeOutput {
  /** `<hostname>-<generation>`, the Hetzner server name. */
  readonly serverName: string;
  /**
   * The Kubernetes Node name (machine hostname, `--hostname-override`): equal to `serverName`, so
   * that the old and new server of a replacement never register as one Node.
   */
  readonly nodeName: string;
  /** The generation suffix (see fleet/generationSuffix.ts). */
  readonly generation: string;
  /** The spread placement group index the server runs in (it never moves). */
  readonly spreadGroup: number;
  /** Hetzner delete protection as declared this run. */
  readonly deleteProtection: boolean;
  /** Where the server's bootstrap token secret comes from (see kubernetes/bootstrapToken.ts). */
  readonly bootstrapTokenSecret: BootstrapTokenSecretSource;
  /** The resources of its drain, Node removal and token (see fleet/memberResources.ts). */
  readonly memberResources: MemberResources;
  readonly ipv4: pulumi.Output<string>;
}

/**
 * Replace-forcing inputs of a server kept at its old generation: the engine keeps their values from
 * the state, so the running server is left as it is (its generation is what it was created with),
 * on the network or off it, in a spread group or not, as it was created.
 */
const RETAINED_SERVER_IGNORED_INPUTS = [
  "userData",
  "image",
  "serverType",
  "sshKeys",
  "location",
  "networks",
  "placementGroupId",
  "publicNets",
] as const;

/**
 * The previous run's node outputs of one pool plus Node readiness: what the next run's `current` is.
 * Undefined when a node of the pool was recorded by a nodefleet without rollouts (no spread group):
 * that run declares the pool as before and records what the next one needs.
 */
export function currentHcloudServers(
  previousNodes: ReadonlyArray<
    Partial<Pick<HcloudNodeOutputValues, "bootstrapTokenSecret" | "spreadGroup" | "generation" | "deleteProtection" | "memberResources">> &
      Pick<HcloudNodeOutputValues, "pool" | "nodeId" | "serverType" | "location" | "nodeName">
  >,
  pool: string,
  readyNodeNames: ReadonlySet<string>,
): CurrentHcloudServer[] | undefined {
  const nodes = previousNodes.filter((n) => n.pool === pool);
  if (nodes.some((n) => typeof n.generation !== "string" || !Number.isInteger(n.spreadGroup))) return undefined;
  return nodes.map((n) => ({
    nodeId: n.nodeId,
    generation: n.generation as string,
    ready: readyNodeNames.has(n.nodeName),
    spreadGroup: n.spreadGroup as number,
    deleteProtection: n.deleteProtection === true,
    serverType: n.serverType,
    location: n.location,
    ...(n.bootstrapTokenSecret === "random-password" ? { bootstrapTokenSecret: "random-password" as const } : {}),
    memberResources: recordedMemberResources(n.memberResources),
  }));
}

/** An HcloudNodeOutput as it appears in the stack's outputs (Outputs resolved). */
export type HcloudNodeOutputValues = pulumi.Unwrap<HcloudNodeOutput>;

/** What a run did to the pool's rollout: the stack output `rollout` and `nodefleet preview` report it. */
export interface HcloudPoolRolloutSummary {
  readonly pool: string;
  /** Members this run starts replacing. */
  readonly replacing: readonly string[];
  /** Old servers this run drains and deletes (`<nodeId>-<generation>`). */
  readonly removing: readonly string[];
  /** Servers whose delete protection this run lifts, to be removed by the next run. */
  readonly unprotecting: readonly string[];
  /** Members still to finish after this run. */
  readonly remaining: number;
  /** Why more could not start this run. */
  readonly waiting?: string;
}

/**
 * `nodefleet:hcloud:NodePool`. Bootstrap tokens create Kubernetes Secrets: give the component a
 * Kubernetes provider through `providers` (the Fleet does).
 *
 * Each run declares the servers the rollout planner chose (fleet/rolloutPlan.ts): members at their
 * wanted generation, old generations still needed, and at most `maxSurge` new ones beside them.
 * A server left out is drained (cordon, evictions within PodDisruptionBudgets) and then deleted
 * with its Node: the drain depends on the server, the server on the Node removal, and Pulumi deletes
 * dependents first.
 */
export class HcloudNodePool extends pulumi.ComponentResource {
  readonly servers: hcloud.Server[] = [];
  readonly placementGroups: hcloud.PlacementGroup[] = [];
  readonly nodeRemovals: Array<KubernetesNodeRemoval | NodeRemoval> = [];
  readonly nodeDrains: Array<KubernetesNodeDrain | NodeDrain> = [];
  readonly nodes: HcloudNodeOutput[] = [];
  /** This run's rollout step. */
  readonly rollout: RolloutPlan;
  readonly rolloutSummary: HcloudPoolRolloutSummary;
  private readonly poolName: string;
  private clusterAccess: ClusterAccessProvider | undefined;

  constructor(name: string, args: HcloudNodePoolArgs, opts?: pulumi.ComponentResourceOptions) {
    super("nodefleet:hcloud:NodePool", name, {}, opts);
    this.poolName = name;
    const { cluster, pool } = args;
    const planned = planHcloudServers(cluster, pool, args.members, args.privateSubnet, args.privateNetworkRange);
    const current = args.current ?? [];
    const poolLabels = { [OWNERSHIP_LABELS.cluster]: cluster.id, [OWNERSHIP_LABELS.pool]: pool.name };
    const deleteProtection = pool.deleteProtection ?? false;
    const keyless = planned.filter((p) => p.sshKeys.length === 0).map((p) => p.member.hostname);
    if (keyless.length > 0) {
      // Hetzner sets a root password on a server created without SSH keys and e-mails it.
      void pulumi.log.warn(
        `pool ${pool.name}: ${keyless.join(", ")} get no SSH key, so Hetzner sets a root password and e-mails it to the project owner; set sshKeys on the pool`,
        this,
      );
    }
    // A pool with several locations keeps spread groups per location (a group holds one location's servers).
    const perLocationGroups = (pool.locations?.length ?? 0) > 1;
    this.rollout = planRollout(
      planned.map((p) => ({
        nodeId: p.member.nodeId,
        generation: p.generation,
        placementSlot: p.placementSlot,
        location: p.member.location,
      })),
      current,
      args.rollout ?? DEFAULT_ROLLOUT,
      {
        ...((args.networkLimit ?? pool.network !== "public")
          ? { serversOutsidePool: args.serversOutsidePool ?? 0 }
          : { networkSize: Number.POSITIVE_INFINITY }),
        perLocationGroups,
      },
    );
    const serverKey = (s: { nodeId: string; generation: string }) => `${hostnameFor(cluster, s.nodeId)}-${s.generation}`;
    this.rolloutSummary = {
      pool: pool.name,
      replacing: this.rollout.replacing,
      removing: this.rollout.removals.map(serverKey),
      unprotecting: this.rollout.servers.filter((s) => s.unprotect).map(serverKey),
      remaining: this.rollout.remaining,
      ...(this.rollout.waiting ? { waiting: this.rollout.waiting } : {}),
    };

    const placementGroupIds = new Map<string, pulumi.Output<number>>();
    // `pg-<index>` as before, for a pool's only or first location (so a pool that goes from
    // `location: fsn1` to `locations: [fsn1, ...]` keeps its groups); `pg-<location>-<index>` for the others.
    const placementGroupId = (index: number, location: string) => {
      const suffix = !perLocationGroups || location === pool.location ? `pg-${index}` : `pg-${location}-${index}`;
      const existing = placementGroupIds.get(suffix);
      if (existing) return existing;
      const group = new hcloud.PlacementGroup(
        `${name}-${suffix}`,
        { name: `${cluster.id}-${pool.name}-${suffix}`, type: "spread", labels: poolLabels },
        { parent: this },
      );
      this.placementGroups.push(group);
      const id = group.id.apply((value) => Number(value));
      placementGroupIds.set(suffix, id);
      return id;
    };

    const wanted = new Map(planned.map((p) => [p.member.nodeId, p]));
    const now = args.now ?? Date.now();
    for (const step of this.rollout.servers) {
      const plan = wanted.get(step.nodeId);
      const protectedNow = deleteProtection && !step.unprotect;
      const running = current.find((c) => c.nodeId === step.nodeId && c.generation === step.generation);
      // A running server keeps the resources it was created with; without current servers the
      // member's record says (an autoscaled member's snapshot), else it is new.
      const resources: MemberResources = running
        ? recordedMemberResources(running.memberResources)
        : args.current === undefined
          ? (plan?.member.memberResources ?? NEW_MEMBER_RESOURCES)
          : NEW_MEMBER_RESOURCES;
      // Without the current servers nothing is known about joins: the token is fixed at creation.
      // An earlier nodefleet's RandomString token (its secret is its id, in clear in the state) is
      // kept only while its machine may still need it; once the Node has registered its Secret is
      // gone, so the token moves to a RandomPassword and the server keeps its user data.
      const lifecycle: Pick<BootstrapTokenArgs, "secretSource" | "phase"> =
        args.current === undefined
          ? { secretSource: plan?.member.bootstrapTokenSecret ?? "random-password" }
          : running
            ? running.ready
              ? { secretSource: "random-password", phase: { phase: "joined" } }
              : { secretSource: running.bootstrapTokenSecret ?? "random-string", phase: { phase: "booting" } }
            : { secretSource: "random-password", phase: { phase: "join", joinMarginMinutes: bootstrapTokenJoinMargin(cluster), now } };
      if (plan && plan.generation === step.generation) {
        this.declareServer(
          args,
          plan,
          { spreadGroup: step.spreadGroup, deleteProtection: protectedNow },
          plan.spread ? placementGroupId(step.spreadGroup, plan.member.location) : undefined,
          poolLabels,
          lifecycle,
          resources,
        );
      } else {
        if (!running)
          throw new Error(`pool ${pool.name}: the rollout kept server ${serverKey(step)}, which is not among the current servers`);
        this.declareRetainedServer(
          args,
          running,
          { deleteProtection: protectedNow },
          placementGroupId(step.spreadGroup, running.location),
          poolLabels,
          lifecycle,
          resources,
        );
      }
    }
    this.registerOutputs({ nodes: this.nodes, rollout: this.rolloutSummary });
  }

  /**
   * A server at its member's wanted generation, with its token, Node removal and drain. Once its
   * token is fixed (the server runs, or no current servers are known: fixed from its creation) an
   * existing server keeps the user data it was created with: every other input of it is in the
   * generation, so a different text can only come from another nodefleet's renderer, and Hetzner
   * would replace the server under its own, taken, name. Such a change reaches the next generation.
   */
  private declareServer(
    args: HcloudNodePoolArgs,
    plan: PlannedHcloudServer,
    placement: { spreadGroup: number; deleteProtection: boolean },
    placementGroupId: pulumi.Output<number> | undefined,
    poolLabels: Record<string, string>,
    lifecycle: Pick<BootstrapTokenArgs, "secretSource" | "phase">,
    resources: MemberResources,
  ): void {
    const { member, render } = plan;
    // Named by generation: a replacement gets a fresh token, and the new server is created before the old one goes.
    const token = this.declareToken(`${plan.serverName}-token`, args, plan.nodeName, lifecycle, resources);
    const userData = pulumi.secret(
      token.token.apply((secret) => {
        const text = renderWorkerUserData(plan.cluster, render, secret);
        assertHcloudUserDataSize(member.hostname, text);
        return text;
      }),
    );
    this.declareMachine(args, {
      serverName: plan.serverName,
      nodeName: plan.nodeName,
      generation: plan.generation,
      member,
      token,
      inputs: { serverType: member.serverType, image: plan.image, location: member.location, sshKeys: [...plan.sshKeys], userData },
      privateNetwork: plan.privateNetwork,
      publicNet: plan.publicNet,
      bootstrapTokenSecret: resources === "plugin" ? "random-password" : (lifecycle.secretSource ?? "random-password"),
      resources,
      keepsUserData: lifecycle.phase?.phase !== "join",
      placementGroupId,
      poolLabels,
      ...placement,
    });
  }

  /**
   * A running server kept at its old generation while the rollout has not reached it: its token
   * and Node removal keep their names, and its replace-forcing inputs are left as the state has them.
   */
  private declareRetainedServer(
    args: HcloudNodePoolArgs,
    running: CurrentHcloudServer,
    placement: { deleteProtection: boolean },
    placementGroupId: pulumi.Output<number>,
    poolLabels: Record<string, string>,
    lifecycle: Pick<BootstrapTokenArgs, "secretSource" | "phase">,
    resources: MemberResources,
  ): void {
    const hostname = hostnameFor(args.cluster, running.nodeId);
    const serverName = generationServerName(hostname, running.generation);
    const member = args.members.find((m) => m.nodeId === running.nodeId);
    const identity = {
      nodeId: running.nodeId,
      hostname,
      providerID: member?.providerID ?? hcloudMemberProviderId(args.cluster, running.nodeId),
      pool: args.pool.name,
      serverType: running.serverType,
      location: running.location,
    };
    const token = this.declareToken(`${serverName}-token`, args, serverName, lifecycle, resources);
    this.declareMachine(args, {
      serverName,
      nodeName: serverName,
      generation: running.generation,
      member: identity,
      token,
      inputs: { serverType: running.serverType, location: running.location },
      // Ignored (RETAINED_SERVER_IGNORED_INPUTS): the server stays on or off the network as created.
      privateNetwork: args.pool.network !== "public",
      publicNet: { ipv4: args.pool.publicIpv4 ?? true, ipv6: args.pool.publicIpv6 ?? true },
      bootstrapTokenSecret: resources === "plugin" ? "random-password" : (lifecycle.secretSource ?? "random-password"),
      resources,
      retained: true,
      placementGroupId,
      poolLabels,
      spreadGroup: running.spreadGroup,
      ...placement,
    });
  }

  /** The pool's provider of nodefleet's own resources, declared once with the cluster credentials when a member needs it. */
  private access(args: HcloudNodePoolArgs): ClusterAccessProvider {
    this.clusterAccess ??= new ClusterAccessProvider(
      `${this.poolName}-cluster-access`,
      args.kubeconfig === undefined ? {} : { kubeconfig: args.kubeconfig },
      { parent: this },
    );
    return this.clusterAccess;
  }

  /**
   * A server's bootstrap token in the member's flavour: one NodeBootstrapToken, or the BootstrapToken
   * component of the members created before it. The same lifecycle either way (kubernetes/bootstrapToken.ts).
   */
  private declareToken(
    name: string,
    args: HcloudNodePoolArgs,
    nodeName: string,
    lifecycle: Pick<BootstrapTokenArgs, "secretSource" | "phase">,
    resources: MemberResources,
  ): { readonly resource: pulumi.Resource; readonly token: pulumi.Output<string> } {
    if (resources === "dynamic") {
      const component = nodeBootstrapToken(name, args.cluster, nodeName, this, lifecycle);
      return { resource: component, token: component.token };
    }
    const { cluster } = args;
    const phase = lifecycle.phase;
    const frozen = phase?.phase === "booting" || phase?.phase === "joined";
    const resource = new NodeBootstrapToken(
      name,
      nodeBootstrapTokenArgs(cluster, nodeName, {
        ...(phase?.phase === "join"
          ? { joinWindow: String(joinWindow(cluster.bootstrapTokenTtlMinutes, phase.joinMarginMinutes, phase.now)) }
          : {}),
        secretObject: phase?.phase !== "joined",
      }),
      { parent: this, provider: this.access(args), ...(frozen ? { ignoreChanges: ["joinWindow", "ttlMinutes"] } : {}) },
    );
    return { resource, token: pulumi.secret(resource.token) };
  }

  private declareMachine(
    args: HcloudNodePoolArgs,
    machine: {
      serverName: string;
      nodeName: string;
      generation: string;
      member: Parameters<typeof nodeOutputIdentity>[0];
      token: { readonly resource: pulumi.Resource };
      resources: MemberResources;
      inputs: Pick<hcloud.ServerArgs, "serverType" | "image" | "location" | "sshKeys" | "userData">;
      /** Joins the cluster's Hetzner network; false for `network: public` (no attachment, no 100 cap). */
      privateNetwork: boolean;
      /** Public IPv4 and IPv6 (`publicIpv4`/`publicIpv6`); a server without IPv4 routes through the NAT gateway. */
      publicNet: { readonly ipv4: boolean; readonly ipv6: boolean };
      bootstrapTokenSecret: BootstrapTokenSecretSource;
      retained?: boolean;
      keepsUserData?: boolean;
      /** None for `placement: none` (no spread group). */
      placementGroupId: pulumi.Output<number> | undefined;
      poolLabels: Record<string, string>;
      spreadGroup: number;
      deleteProtection: boolean;
    },
  ): void {
    // Named by generation like the Node it deletes (`<serverName>-node-removal`): a replacement
    // deletes the old generation's Node after the old server, and removing the member deletes its Node.
    const nodeRemoval =
      machine.resources === "plugin"
        ? args.kubeconfig === undefined
          ? undefined
          : new NodeRemoval(
              `${machine.nodeName}-node-removal`,
              { nodeName: machine.nodeName },
              { parent: this, provider: this.access(args) },
            )
        : memberNodeRemoval(machine.nodeName, args.kubeconfig, this);
    if (nodeRemoval) this.nodeRemovals.push(nodeRemoval);
    const server = new hcloud.Server(
      machine.serverName,
      {
        name: machine.serverName,
        ...machine.inputs,
        labels: { ...machine.poolLabels, [OWNERSHIP_LABELS.node]: machine.member.nodeId },
        firewallIds: args.firewallIds,
        ...(machine.placementGroupId ? { placementGroupId: machine.placementGroupId } : {}),
        // aliasIps: [] avoids a detach/attach on every update (terraform-provider-hcloud #650).
        ...(machine.privateNetwork ? { networks: [{ networkId: args.networkId, aliasIps: [] }] } : {}),
        publicNets: [{ ipv4Enabled: machine.publicNet.ipv4, ipv6Enabled: machine.publicNet.ipv6 }],
        deleteProtection: machine.deleteProtection,
        rebuildProtection: machine.deleteProtection,
      },
      // The token Secret must exist in the cluster before the node boots and joins; the Node is
      // deleted only after the server (dependents are deleted first).
      {
        parent: this,
        dependsOn: [
          machine.token.resource,
          ...(args.subnet ? [args.subnet] : []),
          ...(args.natRoute ? [args.natRoute] : []),
          ...(nodeRemoval ? [nodeRemoval] : []),
        ],
        ...(machine.retained
          ? { ignoreChanges: [...RETAINED_SERVER_IGNORED_INPUTS] }
          : machine.keepsUserData
            ? { ignoreChanges: ["userData"] }
            : {}),
      },
    );
    this.servers.push(server);
    // Depends on the server, so it is deleted (cordon and evict) before the server is.
    const drain =
      machine.resources === "plugin"
        ? args.kubeconfig === undefined
          ? undefined
          : new NodeDrain(
              `${machine.nodeName}-drain`,
              { nodeName: machine.nodeName, timeoutSeconds: args.drainTimeoutSeconds ?? DEFAULT_DRAIN_TIMEOUT_SECONDS },
              { parent: this, dependsOn: [server], provider: this.access(args) },
            )
        : memberNodeDrain(machine.nodeName, args.kubeconfig, args.drainTimeoutSeconds, server, this);
    if (drain) this.nodeDrains.push(drain);
    this.nodes.push({
      ...nodeOutputIdentity(machine.member),
      // Read at boot from the metadata service: the same server id the engine got back.
      ...(providerIdFromMetadata(machine.member.providerID) ? { providerID: server.id.apply(hcloudProviderId) } : {}),
      serverName: machine.serverName,
      nodeName: machine.nodeName,
      generation: machine.generation,
      spreadGroup: machine.spreadGroup,
      deleteProtection: machine.deleteProtection,
      bootstrapTokenSecret: machine.bootstrapTokenSecret,
      memberResources: machine.resources,
      serverId: server.id,
      ipv4: server.ipv4Address,
      privateIpv4: pulumi
        .all([server.networks, args.networkId])
        .apply(([networks, networkId]) => (networks ?? []).find((n) => Number(n.networkId) === Number(networkId))?.ip),
    });
  }
}
