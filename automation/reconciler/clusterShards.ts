/**
 * A cluster's reconcilers, one per API stack shard (apiShard.ts), seen from the service as one:
 * a change wakes the shard it belongs to, shards run concurrently up to a bound, so a delete in
 * one shard no longer holds a create in another, and readiness, queue depth and shutdown cover
 * them all. A shard's reconciler is made the first time a claim of it needs a run.
 */
import { EventEmitter } from "node:events";
import pLimit from "p-limit";
import type { ClaimRepository } from "../store/claimRepository";
import type { ClusterReconciler, Degradation } from "./clusterReconciler";
import { DEFAULT_SHARD } from "./apiShard";

/** Engine runs of one cluster at once unless configured (NODEFLEET_SHARD_RUNS): each run is a CLI and a program. */
export const DEFAULT_CONCURRENT_SHARD_RUNS = 2;

export interface ClusterShardsOptions {
  readonly clusterId: string;
  readonly store: Pick<ClaimRepository, "shards">;
  /** Told when the shards with unfinished claims cannot be read: then only shard 0 and the shards already known are woken. */
  readonly onReadFailure?: (error: unknown) => void;
  /** Engine runs of the cluster's shards at once (default DEFAULT_CONCURRENT_SHARD_RUNS). */
  readonly concurrentRuns?: number;
  /** The reconciler of one shard, running its engine runs through `runGate`. */
  readonly reconcilerFor: (shard: string, runGate: <T>(run: () => Promise<T>) => Promise<T>) => ClusterReconciler;
}

/** A degradation of one shard, naming it. */
export interface ShardDegradation extends Degradation {
  readonly shard: string;
}

const UNFINISHED = ["PENDING", "PROVISIONING", "TERMINATING"] as const;

export class ClusterShards extends EventEmitter {
  readonly clusterId: string;
  private readonly reconcilers = new Map<string, ClusterReconciler>();
  private readonly gate: <T>(run: () => Promise<T>) => Promise<T>;
  private stopped = false;

  constructor(private readonly options: ClusterShardsOptions) {
    super();
    // Every create with waitSeconds listens for claim changes.
    this.setMaxListeners(0);
    this.clusterId = options.clusterId;
    const limit = pLimit(options.concurrentRuns ?? DEFAULT_CONCURRENT_SHARD_RUNS);
    this.gate = (run) => limit(run);
  }

  /** The shard's reconciler, made (and told of a shutdown under way) on first use. */
  shard(shard: string): ClusterReconciler {
    let reconciler = this.reconcilers.get(shard);
    if (!reconciler) {
      reconciler = this.options.reconcilerFor(shard, this.gate);
      reconciler.on("claims", (nodeIds: readonly string[]) => this.emit("claims", nodeIds));
      this.reconcilers.set(shard, reconciler);
      if (this.stopped) reconciler.beginShutdown();
    }
    return reconciler;
  }

  /** Picks up what a previous process left unfinished, in every shard that has some. */
  start(): void {
    this.withUnfinishedShards((shards) => {
      for (const shard of new Set([DEFAULT_SHARD, ...shards])) this.shard(shard).start();
    });
  }

  /** A change arrived in `shard` (every shard with unfinished claims when not given). */
  notify(shard?: string): void {
    if (shard !== undefined) return this.shard(shard).notify();
    this.withUnfinishedShards((shards) => {
      for (const s of new Set([...this.reconcilers.keys(), ...shards])) this.shard(s).notify();
    });
  }

  /** One run of `shard` handed back by the run scheduler (ClusterReconciler.runDispatched). */
  runDispatched(shard: string, cancellation: AbortSignal): Promise<string> {
    return this.shard(shard).runDispatched(cancellation);
  }

  /** The shards holding unfinished claims, read from the store; none when it cannot be read (shard 0 still starts). */
  private withUnfinishedShards(use: (shards: readonly string[]) => void): void {
    this.options.store.shards(this.clusterId, UNFINISHED).then(use, (error: unknown) => {
      this.options.onReadFailure?.(error);
      use([]);
    });
  }

  get busy(): boolean {
    return [...this.reconcilers.values()].some((r) => r.busy);
  }

  get stopping(): boolean {
    return this.stopped;
  }

  /** Engine runs started by every shard. */
  get runCount(): number {
    return [...this.reconcilers.values()].reduce((sum, r) => sum + r.runCount, 0);
  }

  /** Claims waiting for a run, in every shard. */
  async queueDepth(): Promise<number> {
    const depths = await Promise.all([...this.reconcilers.values()].map((r) => r.queueDepth()));
    return depths.reduce((sum, depth) => sum + depth, 0);
  }

  /** The first degraded shard (by shard name), naming it; undefined while every shard is well. */
  get degraded(): ShardDegradation | undefined {
    for (const shard of [...this.reconcilers.keys()].sort()) {
      const degradation = this.reconcilers.get(shard)!.degraded;
      if (degradation) return { ...degradation, shard };
    }
    return undefined;
  }

  /** Every shard stops starting runs; whoever waits for claim changes is told at once ("stopping"). */
  beginShutdown(): void {
    if (!this.stopped) {
      this.stopped = true;
      this.emit("stopping");
    }
    for (const r of this.reconcilers.values()) r.beginShutdown();
  }

  /** Waits for every shard's run in progress (each at most graceMs), then aborts what is left. */
  async stop(graceMs?: number): Promise<void> {
    this.beginShutdown();
    await Promise.all([...this.reconcilers.values()].map((r) => r.stop(graceMs)));
  }
}
