/**
 * A stack-runs worker in a process of its own (test/automation/temporal/stackRuns.test.ts): two of
 * them are two workers on one task queue (one process may register only one worker per queue and
 * task type), and one can be killed during a run. Its fake engine run tells the parent (IPC) when it
 * starts and ends, timed by this machine's clock, and lasts `runMs`, or until the process is killed
 * or the run cancelled.
 *
 *   node temporalWorkerProgram.js '<WorkerProgramConfig as JSON>'
 */
import { Context } from "@temporalio/activity";
import { NativeConnection } from "@temporalio/worker";
import { createStackRunsWorker } from "../../automation/temporal/stackRunsWorker";
import { installTestRuntime } from "./temporalRuntime";

export interface WorkerProgramConfig {
  readonly address: string;
  readonly taskQueue: string;
  readonly identity: string;
  /** How long a run lasts; without it, until it is cancelled or the process killed. */
  readonly runMs?: number;
  /** Take workflow tasks too (the program bundles the workflow code itself). */
  readonly workflows: boolean;
}

export interface ProgramRun {
  readonly worker: string;
  readonly shard: string;
  readonly attempt: number;
  readonly at: number;
}

/** What the parent hears from the program. */
export type WorkerProgramMessage =
  { readonly ready: true } | { readonly started: ProgramRun } | { readonly ended: ProgramRun & { readonly endedAt: number } };

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2]!) as WorkerProgramConfig;
  const tell = (message: WorkerProgramMessage) => process.send?.(message);
  installTestRuntime();
  const connection = await NativeConnection.connect({ address: config.address });
  const worker = await createStackRunsWorker({
    connection,
    taskQueue: config.taskQueue,
    identity: config.identity,
    ...(config.workflows ? {} : { workflows: false as const }),
    run: async ({ shard }, signal) => {
      const run = { worker: config.identity, shard, attempt: Context.current().info.attempt, at: Date.now() };
      tell({ started: run });
      try {
        await new Promise((resolve, reject) => {
          if (config.runMs !== undefined) setTimeout(resolve, config.runMs);
          signal.addEventListener("abort", () => reject(signal.reason as Error));
        });
        return { summary: `${config.identity} ran ${shard}` };
      } finally {
        tell({ ended: { ...run, endedAt: Date.now() } });
      }
    },
  });
  tell({ ready: true });
  await worker.run();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
