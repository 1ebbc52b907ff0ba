/**
 * The run activity's retry policy, in the reconciler's terms (batchWindow.ts): Temporal waits
 * `initialInterval * backoffCoefficient^(n-1)`, at most `maximumInterval`, after the n-th failed
 * attempt, which is retryDelay's rule. Attempts are unlimited, as the in-process reconciler retries a
 * run that failed as a whole until one goes through; an operator stops it by cancelling the workflow.
 */
import type { RetryPolicy } from "@temporalio/common";
import { RETRY_BACKOFF, type RetryConfig } from "../reconciler/batchWindow";

export function runRetryPolicy(retry: RetryConfig): RetryPolicy {
  return { initialInterval: retry.initialMs, backoffCoefficient: RETRY_BACKOFF, maximumInterval: retry.maxMs };
}
