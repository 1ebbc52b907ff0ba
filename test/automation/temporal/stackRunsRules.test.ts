/**
 * The stack-runs workflow's rules that need no server: its retry policy waits as the in-process
 * reconciler's backoff does, and its workflow id is its API stack's, one per stack.
 */
import { strict as assert } from "node:assert";
import fc from "fast-check";
import { DEFAULT_RETRY, retryDelay } from "../../../automation/reconciler/batchWindow";
import { runRetryPolicy } from "../../../automation/temporal/runRetryPolicy";
import { stackRunsWorkflowId } from "../../../automation/temporal/stackRunsClient";

/** The wait before attempt n + 1 as Temporal computes it from a retry policy (docs.temporal.io, "Retry Policies"). */
function temporalInterval(policy: ReturnType<typeof runRetryPolicy>, failedAttempt: number): number {
  const initial = Number(policy.initialInterval);
  return Math.min(Number(policy.maximumInterval), initial * (policy.backoffCoefficient ?? 2) ** (failedAttempt - 1));
}

describe("stack runs on Temporal: rules", () => {
  it("retries a run after the delays retryDelay gives, without a limit on attempts", () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5, 6, 7].map((n) => temporalInterval(runRetryPolicy(DEFAULT_RETRY), n)),
      [1, 2, 3, 4, 5, 6, 7].map((n) => retryDelay(n, DEFAULT_RETRY)),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 600_000 }),
        fc.integer({ min: 1, max: 25 }),
        (initialMs, cap, n) => {
          const config = { initialMs, maxMs: Math.max(initialMs, cap) };
          assert.equal(temporalInterval(runRetryPolicy(config), n), retryDelay(n, config));
        },
      ),
    );
    assert.equal(runRetryPolicy(DEFAULT_RETRY).maximumAttempts, undefined);
  });

  it("names the workflow after the API stack, so one stack has one workflow", () => {
    assert.equal(stackRunsWorkflowId("c1", "0"), "nodefleet-runs-c1-api");
    assert.equal(stackRunsWorkflowId("c1", "pool-1"), "nodefleet-runs-c1-api-pool-1");
    assert.notEqual(stackRunsWorkflowId("c1", "pool-1"), stackRunsWorkflowId("c2", "pool-1"));
  });
});
