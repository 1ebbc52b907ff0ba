/**
 * The batch window of batchWindow.ts as workflow timers, so a replay takes the same decisions: the
 * first change starts the window's longest span, every change restarts its quiet span, and the
 * window closes when either fires. Changes arriving during a run open the next window at once, timed
 * from the changes and not from the run's end, as the in-process reconciler's window is.
 */
import { CancellationScope, condition, sleep } from "@temporalio/workflow";
import { type BatchWindowConfig, windowSpans } from "../reconciler/batchWindow";

export class BatchWindowTimers {
  private readonly spans: ReturnType<typeof windowSpans>;
  private longest: CancellationScope | undefined;
  private quiet: CancellationScope | undefined;
  private elapsed = false;

  constructor(config: BatchWindowConfig) {
    this.spans = windowSpans(config);
  }

  /** A change arrived (called from the signal handler). */
  change(): void {
    this.longest ??= this.timer(this.spans.longestMs);
    this.quiet?.cancel();
    this.quiet = this.timer(this.spans.quietMs);
  }

  /** Resolves once the open window has closed (at once when it already has), and empties it for the next change. */
  async closed(): Promise<void> {
    await condition(() => this.elapsed);
    this.longest?.cancel();
    this.quiet?.cancel();
    this.longest = this.quiet = undefined;
    this.elapsed = false;
  }

  private timer(ms: number): CancellationScope {
    const scope = new CancellationScope();
    // A cancelled timer is the window moving on (or the workflow being cancelled, which closed() reports).
    scope
      .run(() => sleep(ms))
      .then(
        () => {
          this.elapsed = true;
        },
        () => undefined,
      );
    return scope;
  }
}
