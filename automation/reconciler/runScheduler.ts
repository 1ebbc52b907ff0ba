/**
 * A scheduler of engine runs outside the process (the scale-out mode's Temporal workflows:
 * automation/temporal/): the reconcilers hand every change to it, and it hands the runs back, one
 * per API stack at a time, to whichever replica's worker takes them; its batch window and retry
 * backoff then replace the reconcilers' own.
 */

/** How a reconciler hands a change of one API stack (cluster and shard) to the scheduler. */
export interface RunDispatch {
  changed(clusterId: string, shard: string): Promise<void>;
}

/** What runs a served cluster's scheduled runs: its shards (ClusterShards.runDispatched). */
export interface DispatchedRuns {
  /** Resolves with the run's summary; rejects when it must be retried; `cancellation` stops it. */
  runDispatched(shard: string, cancellation: AbortSignal): Promise<string>;
}

export interface RunScheduler {
  readonly dispatch: RunDispatch;
  /** This process runs `clusterId`'s scheduled runs from now on; the returned function stops that. */
  serve(clusterId: string, runs: DispatchedRuns): () => void;
}
