/**
 * The engine runs of one API stack as a Temporal workflow (issue 40 part 2). Its id is the stack's
 * (stackRunsClient.ts), and Temporal keeps one open execution per id, so whichever workers poll the
 * task queue, a stack has one run at a time: the workflow starts the next activity only after the
 * last has finished, been cancelled or timed out. Signals say claims changed; the batch window
 * gathers them into one run (`runBatch`, the reconciler's guard and up); changes during a run get the
 * next. With nothing left to run the workflow completes; the next change starts it again.
 *
 * Workflow code runs in Temporal's sandbox and is replayed from history: it reads no clock or
 * randomness and imports only the sandbox-safe modules of this folder and batchWindow.ts.
 */
import {
  ActivityCancellationType,
  continueAsNew,
  condition,
  isCancellation,
  proxyActivities,
  rootCause,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from "@temporalio/workflow";
import { BatchWindowTimers } from "./batchWindowTimers";
import { runRetryPolicy } from "./runRetryPolicy";
import {
  claimsChangedSignal,
  PHASE_ATTRIBUTE,
  stackRunsStatusQuery,
  type LastRun,
  type StackRunActivities,
  type StackRunsInput,
  type StackRunsPhase,
  type StackRunsStatus,
} from "./stackRunsContract";

export async function stackRuns(input: StackRunsInput): Promise<StackRunsStatus> {
  const { clusterId, shard } = input;
  const window = new BatchWindowTimers(input.batch);
  const pending = new Set(input.carried?.pendingNodeIds ?? []);
  let changed = input.carried?.changed ?? false;
  let runs = input.carried?.runs ?? 0;
  let lastRun: LastRun | undefined = input.carried?.lastRun;
  let phase: StackRunsPhase = "waiting";
  const status = (): StackRunsStatus => ({ clusterId, shard, phase, pendingNodeIds: [...pending], runs, ...(lastRun ? { lastRun } : {}) });
  const enter = (next: StackRunsPhase, details: string) => {
    if (next !== phase) upsertSearchAttributes([{ key: PHASE_ATTRIBUTE, value: next }]);
    phase = next;
    setCurrentDetails(details);
  };

  setHandler(claimsChangedSignal, ({ nodeIds }) => {
    changed = true;
    for (const id of nodeIds) pending.add(id);
    window.change();
  });
  setHandler(stackRunsStatusQuery, status);
  if (changed) window.change();

  const { runBatch } = proxyActivities<StackRunActivities>({
    startToCloseTimeout: input.runTimeoutMs,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry: runRetryPolicy(input.retry),
    // A cancelled run has stopped before the workflow moves on: never two runs of the stack at once.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    summary: `engine run of cluster ${clusterId}, shard ${shard}`,
  });

  // signalWithStart delivers its signal with the start (or a continue-as-new carries the change).
  await condition(() => changed);
  for (let runsHere = 0; changed;) {
    if (runsHere >= input.runsPerExecution || workflowInfo().continueAsNewSuggested) {
      // The changes no run has covered yet go along; their window opens again in the next execution.
      await continueAsNew<typeof stackRuns>({
        ...input,
        carried: { changed, pendingNodeIds: [...pending], runs, ...(lastRun ? { lastRun } : {}) },
      });
    }
    enter("batching", `batching ${pending.size} changed claims`);
    await window.closed();
    const covered = [...pending];
    pending.clear();
    changed = false;
    runs += 1;
    runsHere += 1;
    enter("running", `run ${runs}: ${covered.length} changed claims`);
    try {
      const { summary } = await runBatch({ clusterId, shard });
      lastRun = { number: runs, outcome: "succeeded", nodeIds: covered, summary };
    } catch (error) {
      if (isCancellation(error)) {
        lastRun = { number: runs, outcome: "cancelled", nodeIds: covered };
        throw error;
      }
      // Only a failure the retry policy gives up on (non-retryable) ends here; the next change runs again.
      lastRun = { number: runs, outcome: "failed", nodeIds: covered, error: rootCause(error) ?? "unknown" };
    }
  }
  // Signals that arrived with the run's result were handled before this point (signals go first in a
  // workflow task), and one arriving later fails this completion and is handled by a new task.
  enter("waiting", "every change has been run");
  return status();
}
