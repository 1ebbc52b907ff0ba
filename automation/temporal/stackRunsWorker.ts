/**
 * A worker of the stack-runs task queue: it runs the workflows' tasks, the `runBatch` activity with
 * the given engine run, or both. Any number of them, on any machines, share the queue; Temporal gives
 * each task to one of them, and a stack's workflow keeps its runs one at a time.
 */
import { bundleWorkflowCode, type Logger, type NativeConnection, Worker, type WorkflowBundle } from "@temporalio/worker";
import { HEARTBEAT_EVERY_MS, stackRunActivities, type StackRun } from "./runBatchActivity";
import { DEFAULT_STACK_RUNS_TASK_QUEUE } from "./stackRunsContract";

/** The module the workflow bundle is made from. */
const STACK_RUNS_WORKFLOWS = require.resolve("./stackRunsWorkflow");

export interface StackRunsWorkerOptions {
  readonly connection: NativeConnection;
  readonly namespace?: string;
  readonly taskQueue?: string;
  readonly identity?: string;
  /** The engine run of one stack; without it the worker takes no activity tasks. */
  readonly run?: StackRun;
  /**
   * The workflow code: by default bundled when the worker is created (seconds of webpack), a bundle
   * made once (bundleStackRunsWorkflows) for several workers, or `false` for a worker of activities only.
   */
  readonly workflows?: WorkflowBundle | false;
  /** How long a shutdown lets activities under way finish before they are cancelled (default: the SDK's). */
  readonly shutdownGraceMs?: number;
}

/** The workflow code bundled once, for several workers; `logger` gets webpack's report (default: the SDK's, at INFO). */
export async function bundleStackRunsWorkflows(logger?: Logger): Promise<WorkflowBundle> {
  return bundleWorkflowCode({ workflowsPath: STACK_RUNS_WORKFLOWS, ...(logger ? { logger } : {}) });
}

export async function createStackRunsWorker(options: StackRunsWorkerOptions): Promise<Worker> {
  const { workflows } = options;
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace ?? "default",
    taskQueue: options.taskQueue ?? DEFAULT_STACK_RUNS_TASK_QUEUE,
    ...(options.identity ? { identity: options.identity } : {}),
    ...(options.shutdownGraceMs !== undefined ? { shutdownGraceTime: options.shutdownGraceMs } : {}),
    // Heartbeats reach the server this often, so a cancel reaches a run in seconds (runBatchActivity.ts).
    maxHeartbeatThrottleInterval: HEARTBEAT_EVERY_MS,
    ...(options.run ? { activities: stackRunActivities(options.run) } : {}),
    ...(workflows === false ? {} : workflows ? { workflowBundle: workflows } : { workflowsPath: STACK_RUNS_WORKFLOWS }),
  });
}
