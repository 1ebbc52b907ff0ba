/**
 * A Temporal development server on loopback for the scale-out tests: the toolchain's Temporal CLI
 * (`temporal server start-dev`, toolchain/temporal) in memory and headless, started by the SDK's own
 * test environment (@temporalio/testing `createLocal`) from our binary, so nothing is downloaded. It
 * binds 127.0.0.1 only: the gRPC port is a free one the SDK picks, the HTTP and metrics ports free
 * ones the CLI picks on the same address. The stack-runs search attributes are registered at start.
 * `teardown()` stops it; the runner's reaper (reapOnExit.ts) does when a run is cut short.
 */
import { TestWorkflowEnvironment } from "@temporalio/testing";
import { findTool } from "../../automation/engine/toolchain";
import { STACK_RUNS_SEARCH_ATTRIBUTES } from "../../automation/temporal/stackRunsContract";
import { installTestRuntime } from "./temporalRuntime";

export async function startTemporalDevServer(): Promise<TestWorkflowEnvironment> {
  const binary = findTool("temporal");
  if (!binary) throw new Error("temporal is not in the toolchain: run `npm run toolchain`");
  installTestRuntime();
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: "existing-path", path: binary },
      ip: "127.0.0.1",
      ui: false,
      searchAttributes: [...STACK_RUNS_SEARCH_ATTRIBUTES],
    },
  });
}
