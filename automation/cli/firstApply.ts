/**
 * The simulated engine's first apply of the git stack. `serve` starts it only once it listens, so a
 * start that fails before (a taken port) has applied nothing and nothing writes the state after the
 * lock is released. A failed apply is retried with the reconciler's backoff (readyz stays 503
 * "starting" meanwhile): a service that gave up would stay unready until someone restarted it.
 */
import type { Logger } from "pino";
import { type RetryConfig, retryDelay } from "../reconciler/batchWindow";
import { errorMessage } from "../../components/shared/errorMessage";

export class FirstApply {
  /** Resolves once the git stack is applied; rejects only when abandoned. */
  readonly ready: Promise<unknown>;
  private settle!: { resolve: (value: unknown) => void; reject: (error: unknown) => void };
  private retry: NodeJS.Timeout | undefined;
  private attempts = 0;

  constructor(
    private readonly apply: () => Promise<unknown>,
    private readonly retryConfig: RetryConfig,
    private readonly logger: Logger,
  ) {
    this.ready = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    // Nothing listens for it when the service never started.
    this.ready.catch(() => undefined);
  }

  /** Applies, and again after each failure, until it goes through or is abandoned. */
  start(): void {
    this.apply().then(
      (result) => {
        this.logger.info({ summary: (result as { summary: unknown }).summary }, "git stack applied to the simulated cloud");
        this.settle.resolve(result);
      },
      (error: unknown) => {
        this.attempts += 1;
        const delayMs = retryDelay(this.attempts, this.retryConfig);
        this.logger.error(
          { err: errorMessage(error), attempt: this.attempts, delayMs },
          "applying the git stack to the simulated cloud failed; retrying",
        );
        this.retry = setTimeout(() => this.start(), delayMs);
      },
    );
  }

  /** Stops retrying; a run waiting for `ready` is released (it must not hold a shutdown). */
  abandon(): void {
    clearTimeout(this.retry);
    this.settle.reject(new Error("the service stopped before the git stack was applied"));
  }
}
