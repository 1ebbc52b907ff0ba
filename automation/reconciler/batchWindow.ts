/**
 * When the next engine run starts. Changes are collected until the cluster has been quiet for
 * `idleMs` (so a burst of creates lands in one run) but never longer than `maxMs` after the first
 * change (so a steady trickle cannot postpone the run forever); Karpenter's own batching uses the
 * same defaults, 1 s and 10 s.
 */

export interface BatchWindowConfig {
  readonly idleMs: number;
  readonly maxMs: number;
}

export const DEFAULT_BATCH_WINDOW: BatchWindowConfig = { idleMs: 1000, maxMs: 10_000 };

/**
 * The window's two spans: it closes `quietMs` after the last change or `longestMs` after the first,
 * whichever comes first (a window is never shorter than its quiet span). Shared by the in-process
 * reconciler (windowClosesAt) and the Temporal workflow, which runs them as timers.
 */
export function windowSpans(config: BatchWindowConfig): { readonly quietMs: number; readonly longestMs: number } {
  return { quietMs: config.idleMs, longestMs: Math.max(config.idleMs, config.maxMs) };
}

/** Epoch ms at which a window opened at `firstChangeAt`, last touched at `lastChangeAt`, closes. */
export function windowClosesAt(firstChangeAt: number, lastChangeAt: number, config: BatchWindowConfig): number {
  const { quietMs, longestMs } = windowSpans(config);
  return Math.min(lastChangeAt + quietMs, firstChangeAt + longestMs);
}

export interface RetryConfig {
  readonly initialMs: number;
  readonly maxMs: number;
}

export const DEFAULT_RETRY: RetryConfig = { initialMs: 2000, maxMs: 60_000 };

/** Each retry waits this many times longer than the one before (Temporal's `backoffCoefficient`). */
export const RETRY_BACKOFF = 2;

/** Exponential backoff: initialMs, 2x, 4x, ... capped at maxMs (attempt counts from 1). */
export function retryDelay(attempt: number, config: RetryConfig): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  return Math.min(config.maxMs, config.initialMs * RETRY_BACKOFF ** exponent);
}
