/**
 * The service's side of the stack-runs workflow: a claim change signals the workflow of the claim's
 * API stack and starts it when none is open (signalWithStart, atomic at the server), and the status
 * query reads what it is doing. The workflow id is the stack's name, so every replica signalling a
 * stack reaches the one workflow that runs it.
 */
import type { Client, WorkflowHandleWithSignaledRunId } from "@temporalio/client";
import { apiStackName } from "../reconciler/apiStack";
import {
  claimsChangedSignal,
  CLUSTER_ATTRIBUTE,
  DEFAULT_STACK_RUNS_SETTINGS,
  DEFAULT_STACK_RUNS_TASK_QUEUE,
  STACK_ATTRIBUTE,
  STACK_RUNS_WORKFLOW,
  stackRunsStatusQuery,
  type ClaimsChange,
  type StackRunsSettings,
  type StackRunsStatus,
} from "./stackRunsContract";
import type { stackRuns } from "./stackRunsWorkflow";

/** Where a service sends its stacks' changes. */
export interface StackRunsTarget {
  readonly client: Client;
  readonly taskQueue?: string;
  /** Taken by a stack's workflow when this signal starts it; an open workflow keeps its own. */
  readonly settings?: Partial<StackRunsSettings>;
}

export function stackRunsWorkflowId(clusterId: string, shard: string): string {
  return `nodefleet-runs-${apiStackName(clusterId, shard)}`;
}

/** Tells the stack's workflow that these claims changed, starting it when none is open. */
export async function signalClaimsChanged(
  target: StackRunsTarget,
  clusterId: string,
  shard: string,
  nodeIds: readonly string[],
): Promise<WorkflowHandleWithSignaledRunId<typeof stackRuns>> {
  const stack = apiStackName(clusterId, shard);
  return target.client.workflow.signalWithStart<typeof stackRuns, [ClaimsChange]>(STACK_RUNS_WORKFLOW, {
    workflowId: stackRunsWorkflowId(clusterId, shard),
    taskQueue: target.taskQueue ?? DEFAULT_STACK_RUNS_TASK_QUEUE,
    args: [{ clusterId, shard, ...DEFAULT_STACK_RUNS_SETTINGS, ...target.settings }],
    signal: claimsChangedSignal,
    signalArgs: [{ nodeIds }],
    typedSearchAttributes: [
      { key: CLUSTER_ATTRIBUTE, value: clusterId },
      { key: STACK_ATTRIBUTE, value: stack },
    ],
    staticSummary: `engine runs of ${stack}`,
  });
}

/** What the stack's latest workflow execution is doing, or did last. */
export async function stackRunsStatus(client: Client, clusterId: string, shard: string): Promise<StackRunsStatus> {
  return client.workflow.getHandle<typeof stackRuns>(stackRunsWorkflowId(clusterId, shard)).query(stackRunsStatusQuery);
}
