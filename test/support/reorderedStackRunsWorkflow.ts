/**
 * The stack-runs workflow with one timer more before it begins: a history recorded from
 * stackRunsWorkflow.ts must be refused by it, which shows the replay test can fail
 * (test/automation/temporal/stackRuns.test.ts). Bundled by path, as a worker's workflows are.
 */
import { sleep } from "@temporalio/workflow";
import type { StackRunsInput, StackRunsStatus } from "../../automation/temporal/stackRunsContract";
import { stackRuns as recorded } from "../../automation/temporal/stackRunsWorkflow";

export async function stackRuns(input: StackRunsInput): Promise<StackRunsStatus> {
  await sleep(1);
  return recorded(input);
}
