/**
 * What the routes of one cluster do: admission of creates (idempotent per uniqueID, limits and
 * availability checked in the same transaction that commits the claim), reads, deletes, and the
 * cluster and instance-type descriptions. Routes only translate HTTP; this holds the rules.
 */
import { autoscaledPools, type FleetSpec, type HcloudAutoscaledPool } from "../../components/fleet/fleetSpec";
import { partitionKubeletLabels } from "../../components/fleet/kubeletLabels";
import { staticServersOnNetwork } from "../../components/fleet/networkOccupancy";
import { poolInstanceTypes, type InstanceTypeView } from "../catalog/instanceTypes";
import type { LearnedCapacityLookup } from "../catalog/learnedCapacity";
import type { OfferingAvailability } from "../catalog/offeringAvailability";
import { imageUnavailableReason, type ImageSelectorPool, PoolImageSource } from "../catalog/poolImageSource";
import { findServerType, kubernetesArch, type ServerTypeCatalog } from "../catalog/serverTypes";
import type { ClusterShards } from "../reconciler/clusterShards";
import { DEFAULT_MEMBERS_PER_SHARD, shardForNewMember, shardOfClaim } from "../reconciler/apiShard";
import { poolTemplate, poolTemplateHash, templateHash } from "../reconciler/memberSnapshot";
import type { MemberSnapshot, PoolTemplate } from "../store/claimSnapshot";
import type { Claim } from "../store/claimStore";
import type { ClaimRepository } from "../store/claimRepository";
import type { Operation } from "../store/operationLog";
import type { RunStore } from "../store/runStore";
import { admit } from "./admission";
import { ApiError } from "./apiError";
import { nodeIdFor } from "./nodeIdentity";
import { poolNotFoundError } from "./poolNotFound";
import { createRequestHash, isReplayOf } from "./replayForm";
import { nodeView } from "./nodeView";
import type { CreateNodeBody, NodeView } from "./schemas";

export interface ClusterServiceOptions {
  /** The stack's current fleet spec (re-read when the stack file changes). */
  readonly fleet: () => FleetSpec;
  /** The claims (claimRepository.ts): the embedded SQLite store, or one shared by several replicas. */
  readonly store: ClaimRepository;
  /** The engine runs' operation log (runStore.ts). */
  readonly runs: Pick<RunStore, "operations">;
  /** The cluster's reconcilers, one per API stack shard. */
  readonly reconciler: ClusterShards;
  /** Members of one pool per API stack shard (apiShard.ts; default DEFAULT_MEMBERS_PER_SHARD). */
  readonly membersPerShard?: number;
  readonly catalog: () => ServerTypeCatalog;
  readonly availability: OfferingAvailability;
  /** What registered Nodes reported per server type, image and kubelet settings (nodeCapacityWatch.ts); default: nothing learned. */
  readonly learned?: LearnedCapacityLookup;
  /** Why creates are refused now (the git stack is not applied), or undefined. */
  readonly refusal?: () => string | undefined;
  /** Resolves the pools' `imageSelector` per architecture (default: one without a Hetzner client, resolving nothing). */
  readonly images?: PoolImageSource;
}

/** The autoscaled pools that boot snapshots by label selector. */
function selectorPools(fleet: FleetSpec): Array<HcloudAutoscaledPool & ImageSelectorPool> {
  return autoscaledPools(fleet).filter((p): p is HcloudAutoscaledPool & ImageSelectorPool => p.imageSelector !== undefined);
}

/** The smallest non-negative integer not in use. */
export function freeSlot(used: readonly number[]): number {
  const taken = new Set(used);
  let slot = 0;
  while (taken.has(slot)) slot += 1;
  return slot;
}

export class ClusterService {
  /** The views of every visible node (list order), while the claims, the fleet spec and the catalog are as they were. */
  private views:
    | {
        readonly version: number | undefined;
        readonly fleet: FleetSpec;
        readonly catalog: ServerTypeCatalog;
        readonly imagesVersion: number;
        readonly nodes: readonly NodeView[];
        readonly byId: ReadonlyMap<string, NodeView>;
      }
    | undefined;

  private readonly images: PoolImageSource;

  constructor(
    readonly clusterId: string,
    private readonly options: ClusterServiceOptions,
  ) {
    this.images = options.images ?? new PoolImageSource();
  }

  get reconciler(): ClusterShards {
    return this.options.reconciler;
  }

  /** The pool's current template: with `imageSelector`, with its last resolution's images (refreshImages first). */
  private template(fleet: FleetSpec, pool: HcloudAutoscaledPool): PoolTemplate {
    const images = pool.imageSelector !== undefined ? this.images.last({ ...pool, imageSelector: pool.imageSelector }) : undefined;
    return poolTemplate(fleet.cluster, pool, images);
  }

  private templates(fleet: FleetSpec): Map<string, PoolTemplate> {
    return new Map(autoscaledPools(fleet).map((p) => [p.name, this.template(fleet, p)]));
  }

  /** Re-resolves the selector pools' images when their last resolution is old, so a newer snapshot shows as drift. */
  private refreshImages(fleet: FleetSpec): Promise<void> {
    return this.images.refreshStale(selectorPools(fleet));
  }

  private view(claim: Claim, fleet = this.options.fleet(), templates = this.templates(fleet)): NodeView {
    // Claims admitted before the snapshot recorded the architecture: a server type's never changes.
    const type = claim.snapshot.arch === undefined ? findServerType(this.options.catalog(), claim.snapshot.serverType) : undefined;
    return nodeView(fleet.cluster, claim, templates.get(claim.pool), claim.snapshot.arch ?? (type && kubernetesArch(type.architecture)));
  }

  /** Durable data only, like get(). */
  async describe() {
    const fleet = this.options.fleet();
    await this.refreshImages(fleet);
    const described = {
      id: fleet.cluster.id,
      kind: fleet.cluster.kind,
      providerIdScheme: fleet.cluster.providerIdScheme,
      pools: await Promise.all(
        autoscaledPools(fleet).map(async (pool) => {
          const { usage } = await this.options.store.occupancy(this.clusterId, pool.name);
          const template = this.template(fleet, pool);
          return {
            name: pool.name,
            provider: "hcloud" as const,
            location: pool.location,
            serverTypes: [...pool.serverTypes],
            limits: pool.limits,
            usage: { nodes: usage.nodes, cpu: usage.cpuMillis / 1000, memoryGiB: usage.memoryMiB / 1024 },
            templateHash: poolTemplateHash(template),
            labels: { ...template.labels },
            taints: template.taints.map((t) => ({ ...t })),
          };
        }),
      ),
    };
    await this.options.store.durable();
    return described;
  }

  async instanceTypes(): Promise<InstanceTypeView[]> {
    const fleet = this.options.fleet();
    await this.refreshImages(fleet);
    const usages = await Promise.all(
      autoscaledPools(fleet).map(async (pool) => (await this.options.store.occupancy(this.clusterId, pool.name)).usage),
    );
    return autoscaledPools(fleet).flatMap((pool, index) =>
      withImageAvailability(
        pool,
        this.images,
        poolInstanceTypes(
          this.options.catalog(),
          pool,
          fleet.cluster.kubelet,
          this.options.availability,
          { limits: pool.limits, usage: usages[index]! },
          this.options.learned,
          this.clusterId,
        ).instanceTypes,
      ),
    );
  }

  /**
   * Admits a create; `created` is false when the same request was made before. The claim is
   * committed (durably, in a group commit with the creates arriving alongside) before this resolves.
   */
  async create(body: CreateNodeBody): Promise<{ created: boolean; node: NodeView }> {
    const fleet = this.options.fleet();
    const pool = autoscaledPools(fleet).find((p) => p.name === body.pool);
    const { store } = this.options;
    const existing = await store.byUniqueId(this.clusterId, body.uniqueID);
    // The first create (or the delete a Conflict reports) may still wait for its fsync: no answer may outrun it.
    if (existing) return { created: false, node: await this.durably(() => Promise.resolve(this.replay(existing, body, fleet))) };
    if (!pool) throw poolNotFoundError(fleet, body.pool);
    const refusal = this.options.refusal?.();
    if (refusal) throw new ApiError("Unavailable", refusal);
    // Resolved before the transaction (Hetzner answers asynchronously): the newest matching snapshot per architecture.
    const images =
      pool.imageSelector !== undefined
        ? { resolved: await this.images.resolve({ ...pool, imageSelector: pool.imageSelector }), poolIndex: fleet.pools.indexOf(pool) }
        : undefined;
    const nodeId = nodeIdFor(body.uniqueID);
    const requestHash = createRequestHash(body);
    // The store looks the uniqueID up again inside the transaction (the same one may be earlier in
    // this group, or come from another replica), and decides with what it reads there.
    const outcome = await store.admit({ clusterId: this.clusterId, uniqueId: body.uniqueID, nodeId, pool: pool.name }, (view) => {
      const { clash, occupancy } = view;
      if (clash) throw new ApiError("Conflict", `node id ${nodeId} derived from uniqueID ${body.uniqueID} is taken by ${clash.uniqueId}`);
      const admitted = admit({
        pool,
        kubelet: fleet.cluster.kubelet,
        request: body,
        catalog: this.options.catalog(),
        availability: this.options.availability,
        clusterId: this.clusterId,
        usage: occupancy.usage,
        ...(this.options.learned ? { learned: this.options.learned } : {}),
        ...(images ? { images } : {}),
        ...(pool.network !== "public" ? { serversOnNetwork: staticServersOnNetwork(fleet.pools) + view.privateNetworkMembers() } : {}),
      });
      const template = poolTemplate(fleet.cluster, pool, images?.resolved);
      const placementSlot = freeSlot(occupancy.placementSlots);
      const shard = shardForNewMember({
        pool: pool.name,
        placementSlot,
        slotShards: occupancy.slotShards,
        membersPerShard: this.options.membersPerShard ?? DEFAULT_MEMBERS_PER_SHARD,
      });
      const requestLabels = body.labels ?? {};
      const snapshot: MemberSnapshot = {
        template,
        serverType: admitted.serverType.name,
        arch: kubernetesArch(admitted.serverType.architecture),
        location: admitted.location,
        requestLabels,
        kubeletLabels: partitionKubeletLabels(requestLabels).accepted,
        requestTaints: body.taints ?? [],
        capacity: admitted.capacity,
        allocatable: admitted.allocatable,
        templateHash: templateHash(template, admitted.serverType.name),
        placementSlot,
        bootstrapTokenSecret: "random-password",
        memberResources: "plugin",
        shard,
      };
      return {
        clusterId: this.clusterId,
        nodeId,
        uniqueId: body.uniqueID,
        requestHash,
        request: body,
        pool: pool.name,
        instanceType: admitted.serverType.name,
        zone: admitted.location,
        snapshot,
        status: "PENDING",
        cpuMillis: admitted.capacity.cpuMillis,
        memoryMiB: admitted.capacity.memoryMiB,
      };
    });
    if ("earlier" in outcome) return { created: false, node: this.replay(outcome.earlier, body, fleet) };
    const { claim } = outcome;
    this.options.reconciler.notify(shardOfClaim(claim), [claim.nodeId]);
    return { created: true, node: this.view(claim, fleet) };
  }

  /** Compared with the stored first body, not its hash: claims admitted before the canonical form keep their replays. */
  private replay(existing: Claim, body: CreateNodeBody, fleet: FleetSpec): NodeView {
    if (!isReplayOf(existing.request as CreateNodeBody, body)) {
      throw new ApiError("Conflict", `uniqueID ${existing.uniqueId} was already used with a different request`, {
        nodeID: existing.nodeId,
      });
    }
    if (existing.status === "GONE") {
      // `status: GONE` tells a burned uniqueID (Karpenter's NodeClaim must end) from a reused one.
      throw new ApiError("Conflict", `uniqueID ${existing.uniqueId} belonged to node ${existing.nodeId}, which has been deleted`, {
        nodeID: existing.nodeId,
        status: "GONE",
      });
    }
    return this.view(existing, fleet);
  }

  private notFound(nodeId: string): ApiError {
    return new ApiError("NodeNotFound", `node ${nodeId} does not exist in cluster ${this.clusterId}`);
  }

  private async claim(nodeId: string): Promise<Claim> {
    const claim = await this.options.store.get(this.clusterId, nodeId);
    if (!claim || claim.status === "GONE") throw this.notFound(nodeId);
    return claim;
  }

  /** The cached views when no claim, not the fleet spec and not the catalog changed since they were made. */
  private freshViews(fleet: FleetSpec) {
    const views = this.views;
    const fresh =
      views &&
      views.version !== undefined &&
      views.version === this.options.store.claimsVersion &&
      views.fleet === fleet &&
      views.catalog === this.options.catalog() &&
      views.imagesVersion === this.images.version;
    return fresh ? views : undefined;
  }

  /**
   * Answers only with durable data (a create committed but not yet fsynced is not seen before its
   * fsync returns): readers wait for the fsync covering what they read.
   */
  async get(nodeId: string): Promise<NodeView> {
    const fleet = this.options.fleet();
    await this.refreshImages(fleet);
    return this.durably(async () => {
      const cached = this.freshViews(fleet);
      const view = cached ? cached.byId.get(nodeId) : this.view(await this.claim(nodeId), fleet);
      if (!view) throw this.notFound(nodeId);
      return view;
    });
  }

  /**
   * What `read` answers (a value or an error such as NodeNotFound), once everything it may have
   * read is durable: a 404 for a delete not yet fsynced is as much an answer as a node is.
   */
  private async durably<T>(read: () => Promise<T>): Promise<T> {
    let outcome: { ok: true; value: T } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await read() };
    } catch (error) {
      outcome = { ok: false, error };
    }
    await this.options.store.durable();
    if (!outcome.ok) throw outcome.error;
    return outcome.value;
  }

  /**
   * Like get(), durable data only. Karpenter's repeated listings are served from the views of the
   * last one while nothing changed: the same array then (what routes may cache their answer by).
   */
  async list(pool?: string): Promise<readonly NodeView[]> {
    const fleet = this.options.fleet();
    await this.refreshImages(fleet);
    let views = this.freshViews(fleet);
    if (!views) {
      const version = this.options.store.claimsVersion;
      const imagesVersion = this.images.version;
      const catalog = this.options.catalog();
      const templates = this.templates(fleet);
      const nodes = (await this.options.store.list(this.clusterId)).map((c) => this.view(c, fleet, templates));
      views = { version, fleet, catalog, imagesVersion, nodes, byId: new Map(nodes.map((n) => [n.nodeID, n])) };
      this.views = views;
    }
    const nodes = pool !== undefined ? views.nodes.filter((n) => n.pool === pool) : views.nodes;
    await this.options.store.durable();
    return nodes;
  }

  /**
   * Accepts a delete, durably (group commit) before it resolves. A claim that never reached a run
   * has no server and is gone at once; repeats change nothing.
   */
  async delete(nodeId: string): Promise<{ nodeID: string; status: "TERMINATING" }> {
    const { store } = this.options;
    // Decided inside the store's transaction: a run may have moved the claim since the request
    // arrived. The shard is the one whose next run removes the member's server; none when it never reached a run.
    const { found, shard } = await store.requestDelete(this.clusterId, nodeId);
    if (found === undefined || found === "GONE") throw this.notFound(nodeId);
    if (shard !== undefined) this.options.reconciler.notify(shard, [nodeId]);
    this.options.reconciler.emit("claims", [nodeId]);
    return { nodeID: nodeId, status: "TERMINATING" };
  }

  operationList(): Promise<Operation[]> {
    return this.options.runs.operations(this.clusterId);
  }

  /** Waits until the node is RUNNING or FAILED (or gone), at most `seconds`; returns its view then. */
  async waitForSettled(nodeId: string, seconds: number): Promise<Claim | undefined> {
    const settled = (c: Claim | undefined) => !c || c.status === "RUNNING" || c.status === "FAILED" || c.status === "GONE";
    const { store } = this.options;
    let claim = await store.get(this.clusterId, nodeId);
    const reconciler = this.options.reconciler;
    // A stopping service answers at once with the claim as it is (it is durable; Karpenter polls Get).
    if (settled(claim) || seconds <= 0 || reconciler.stopping) {
      await store.durable();
      return claim;
    }
    await new Promise<void>((resolve) => {
      const onChange = (ids: readonly string[]) => {
        if (!ids.includes(nodeId)) return;
        void this.options.store.get(this.clusterId, nodeId).then(
          (now) => settled(now) && finish(),
          () => undefined, // a read that failed: the timer or the next change answers
        );
      };
      const timer = setTimeout(() => finish(), seconds * 1000);
      function finish() {
        clearTimeout(timer);
        reconciler.off("claims", onChange);
        reconciler.off("stopping", finish);
        resolve();
      }
      reconciler.on("claims", onChange);
      reconciler.once("stopping", finish);
    });
    claim = await store.get(this.clusterId, nodeId);
    // A delete accepted meanwhile may still wait for its fsync.
    await store.durable();
    return claim;
  }

  viewOf(claim: Claim): NodeView {
    return this.view(claim);
  }
}

/** A selector pool's offerings of an architecture without an image are unavailable, saying why (Karpenter then picks another). */
function withImageAvailability(pool: HcloudAutoscaledPool, images: PoolImageSource, views: InstanceTypeView[]): InstanceTypeView[] {
  if (pool.imageSelector === undefined) return views;
  const resolved = images.last({ ...pool, imageSelector: pool.imageSelector });
  return views.map((view) => {
    const reason = resolved === undefined ? "the pool's imageSelector is not resolved yet" : imageUnavailableReason(resolved, view.name);
    if (reason === undefined) return view;
    return {
      ...view,
      offerings: view.offerings.map((o) => ({ ...o, available: false, unavailableReason: o.unavailableReason ?? reason })),
    };
  });
}
