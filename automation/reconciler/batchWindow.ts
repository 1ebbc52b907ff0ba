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

/** Epoch ms at which a window opened at `firstChangeAt`, last touched at `lastChangeAt`, closes. */
export function windowClosesAt(firstChangeAt: number, lastChangeAt: number, config: BatchWindowConfig): number {
  return Math.min(lastChangeAt + config.idleMs, firstChangeAt + Math.max(config.idleMs, config.maxMs));
}

export interface RetryConfig {
  readonly initialMs: number;
  readonly maxMs: number;
}

export const DEFAULT_RETRY: RetryConfig = { initialMs: 2000, maxMs: 60_000 };

/** Exponential backoff: initialMs, 2x, 4x, ... capped at maxMs (attempt counts from 1). */
export function retryDelay(attempt: number, config: RetryConfig): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  return Math.min(config.maxMs, config.initialMs * 2 ** exponent);
}
