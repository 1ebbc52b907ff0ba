/**
 * The `runBatch` activity: one engine run of one API stack (the reconciler's guard and up), given
 * by the caller, so the workers run what the service runs in process. While the run lasts the
 * activity heartbeats: the server hands the run to another worker when the heartbeats stop (a worker
 * killed mid-run), and a cancellation reaches the run through the heartbeat's answer, as an abort of
 * the signal the run is given. A run that throws is retried with the workflow's backoff.
 */
import { Context } from "@temporalio/activity";
import { DEFAULT_STACK_RUNS_SETTINGS, type RunBatchInput, type RunBatchResult, type StackRunActivities } from "./stackRunsContract";

/** One engine run of the stack; it stops (rejecting) when `signal` aborts. */
export type StackRun = (input: RunBatchInput, signal: AbortSignal) => Promise<RunBatchResult>;

/** Heartbeats per heartbeat timeout at least: one lost or late heartbeat does not lose the run. */
const BEATS_PER_TIMEOUT = 3;
/**
 * A heartbeat at least this often (the worker's throttle lets it through): an operator's cancel
 * reaches the run in its answer, so it lands within seconds rather than the SDK's default 80 % of
 * the timeout.
 */
export const HEARTBEAT_EVERY_MS = 2000;

export function stackRunActivities(run: StackRun): StackRunActivities {
  return {
    async runBatch(input) {
      const context = Context.current();
      const signal = context.cancellationSignal;
      context.heartbeat();
      // The SDK throttles what reaches the server (stackRunsWorker.ts sets the throttle to HEARTBEAT_EVERY_MS).
      const timeoutMs = context.info.heartbeatTimeoutMs || DEFAULT_STACK_RUNS_SETTINGS.heartbeatTimeoutMs;
      const beat = setInterval(() => context.heartbeat(), Math.min(timeoutMs / BEATS_PER_TIMEOUT, HEARTBEAT_EVERY_MS));
      try {
        return await run(input, signal);
      } catch (error) {
        // A run stopped by the cancellation completes the activity as cancelled, not failed.
        throw signal.aborted ? signal.reason : error;
      } finally {
        clearInterval(beat);
      }
    },
  };
}
