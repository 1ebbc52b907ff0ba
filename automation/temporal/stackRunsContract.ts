/**
 * What the stack-runs workflow, the workers running its activity and the service signalling it
 * agree on: the workflow's input, its signal and query, the activity's interface and the search
 * attributes an operator filters by. Safe inside Temporal's workflow sandbox (no Node.js imports),
 * so the workflow and the Node.js side share these one definitions.
 */
import { defineSearchAttributeKey, SearchAttributeType } from "@temporalio/common";
import { defineQuery, defineSignal } from "@temporalio/workflow";
import { DEFAULT_BATCH_WINDOW, DEFAULT_RETRY, type BatchWindowConfig, type RetryConfig } from "../reconciler/batchWindow";

/** The workflow type, the function's name in stackRunsWorkflow.ts. */
export const STACK_RUNS_WORKFLOW = "stackRuns";

/** The task queue the service signals and the workers poll unless configured. */
export const DEFAULT_STACK_RUNS_TASK_QUEUE = "nodefleet-stack-runs";

/** How a stack's engine runs are batched, retried and bounded; fixed when its workflow starts. */
export interface StackRunsSettings {
  readonly batch: BatchWindowConfig;
  /** The backoff between attempts of a run that failed as a whole (the activity's retry policy). */
  readonly retry: RetryConfig;
  /** A worker silent for this long has lost the run: the next attempt goes to another worker. */
  readonly heartbeatTimeoutMs: number;
  /** One attempt of a run at most (a bare-metal install alone may take 82 minutes). */
  readonly runTimeoutMs: number;
  /** Runs per workflow execution before it continues as new, so its history stays small. */
  readonly runsPerExecution: number;
}

export const DEFAULT_STACK_RUNS_SETTINGS: StackRunsSettings = {
  batch: DEFAULT_BATCH_WINDOW,
  retry: DEFAULT_RETRY,
  heartbeatTimeoutMs: 30_000,
  runTimeoutMs: 3 * 60 * 60_000,
  // About twenty events a run: a history stays in the low thousands.
  runsPerExecution: 100,
};

/** The last run, as the status query and the workflow's result report it. */
export interface LastRun {
  /** Counted from 1 across continue-as-new. */
  readonly number: number;
  readonly outcome: "succeeded" | "failed" | "cancelled";
  /** The claims changed since the previous run (the signals' node ids) that this run covered. */
  readonly nodeIds: readonly string[];
  readonly summary?: string;
  readonly error?: string;
}

/** What a continue-as-new hands to the next execution. */
export interface CarriedRuns {
  /** A change arrived that no run has covered yet. */
  readonly changed: boolean;
  readonly pendingNodeIds: readonly string[];
  readonly runs: number;
  readonly lastRun?: LastRun;
}

export interface StackRunsInput extends StackRunsSettings {
  readonly clusterId: string;
  readonly shard: string;
  readonly carried?: CarriedRuns;
}

/** `waiting`: for a change; `batching`: the batch window is open; `running`: the activity is under way. */
export type StackRunsPhase = "waiting" | "batching" | "running";

export interface StackRunsStatus {
  readonly clusterId: string;
  readonly shard: string;
  readonly phase: StackRunsPhase;
  /** Node ids of changes no run has covered yet (a run under way covers only those before it). */
  readonly pendingNodeIds: readonly string[];
  /** Runs started for this stack across continue-as-new. */
  readonly runs: number;
  readonly lastRun?: LastRun;
}

/** A signal's payload: the claims that changed (created, deleted, retried). */
export interface ClaimsChange {
  readonly nodeIds: readonly string[];
}

export const claimsChangedSignal = defineSignal<[ClaimsChange]>("claimsChanged");

export const stackRunsStatusQuery = defineQuery<StackRunsStatus>("status");

/** One engine run of one API stack: what the activity is given. */
export interface RunBatchInput {
  readonly clusterId: string;
  readonly shard: string;
}

export interface RunBatchResult {
  /** One line for the operator (Temporal's UI shows the activity's result). */
  readonly summary: string;
}

export interface StackRunActivities {
  runBatch(input: RunBatchInput): Promise<RunBatchResult>;
}

/** Search attributes set on every stack's workflow; a namespace must have them registered (docs/scaling-api.md). */
export const CLUSTER_ATTRIBUTE = defineSearchAttributeKey("NodefleetCluster", SearchAttributeType.KEYWORD);
export const STACK_ATTRIBUTE = defineSearchAttributeKey("NodefleetStack", SearchAttributeType.KEYWORD);
export const PHASE_ATTRIBUTE = defineSearchAttributeKey("NodefleetRunPhase", SearchAttributeType.KEYWORD);

export const STACK_RUNS_SEARCH_ATTRIBUTES = [CLUSTER_ATTRIBUTE, STACK_ATTRIBUTE, PHASE_ATTRIBUTE] as const;
