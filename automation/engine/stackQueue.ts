/**
 * Serialises runs per stack: a run on a stack starts only after the previous one on the same stack
 * settled (Pulumi would refuse a concurrent update with "the stack is currently locked").
 * Different stacks run concurrently.
 */
export class StackQueue {
  private readonly tails = new Map<string, Promise<unknown>>();
  private readonly depths = new Map<string, number>();

  run<T>(stack: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(stack) ?? Promise.resolve();
    this.depths.set(stack, (this.depths.get(stack) ?? 0) + 1);
    const result = previous.then(task, task);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(stack, tail);
    void tail.then(() => {
      const depth = (this.depths.get(stack) ?? 1) - 1;
      if (depth === 0) {
        this.depths.delete(stack);
        if (this.tails.get(stack) === tail) this.tails.delete(stack);
      } else this.depths.set(stack, depth);
    });
    return result;
  }

  /** Runs queued or in progress on the stack (all stacks when omitted). */
  depth(stack?: string): number {
    if (stack !== undefined) return this.depths.get(stack) ?? 0;
    let total = 0;
    for (const d of this.depths.values()) total += d;
    return total;
  }
}
