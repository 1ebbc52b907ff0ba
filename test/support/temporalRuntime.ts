/**
 * The Temporal SDK's runtime in a test process, installed before the first connection: only errors
 * reach the output (the SDK's own and its native core's), and it installs no signal handlers of its
 * own (the runner's reaper, processGroups.ts, answers SIGINT and SIGTERM, and a worker's handler
 * would keep the process alive). The SDK shuts a runtime down once nothing uses it, and the next
 * test installs another.
 */
import { IllegalStateError } from "@temporalio/common";
import { DefaultLogger, Runtime } from "@temporalio/worker";

/** For the SDK's other loggers (the workflow bundler's). */
export const QUIET_LOGGER = new DefaultLogger("ERROR");

export function installTestRuntime(): void {
  try {
    Runtime.install({
      logger: QUIET_LOGGER,
      telemetryOptions: { logging: { filter: { core: "ERROR" }, forward: {} } },
      shutdownSignals: [],
    });
  } catch (error) {
    // One is in use already: installed by an earlier call of this process.
    if (!(error instanceof IllegalStateError)) throw error;
  }
}
