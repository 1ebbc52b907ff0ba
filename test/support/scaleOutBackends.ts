/**
 * What the scale-out mode's replicas share, on loopback, for a run of `serve` replicas on the local
 * cloud: a throwaway PostgreSQL database (NODEFLEET_DATABASE_URL), the API stacks' state in an
 * S3-compatible bucket (the toolchain's gofakes3, NODEFLEET_API_STACK_BACKEND_URL=s3://…, with
 * credentials it accepts) and, with `temporal`, a Temporal development server whose workflows run
 * the engine runs (NODEFLEET_TEMPORAL_ADDRESS, temporalDevServer.ts). `env` is what each replica
 * adds to its environment; `stop()` ends them all.
 */
import type { TestWorkflowEnvironment } from "@temporalio/testing";
import { suitePostgres } from "./postgresServer";
import { startS3Server } from "./s3Server";
import { startTemporalDevServer } from "./temporalDevServer";

export interface ScaleOutBackends {
  readonly env: Record<string, string>;
  /** The keys of the API stacks' state in the bucket (checkpoints, history, locks). */
  stateKeys(): Promise<string[]>;
  /** With Temporal: its development server, for a test's queries and cancels of the stacks' workflows. */
  readonly temporal?: TestWorkflowEnvironment;
  /** With Temporal: how many workflow executions its namespace holds (the API stacks' runs, continued-as-new ones apart). */
  workflowExecutions?(): Promise<number>;
  stop(): Promise<void>;
}

export async function startScaleOutBackends(runsWhat: string, options: { readonly temporal: boolean }): Promise<ScaleOutBackends> {
  const postgres = suitePostgres(runsWhat);
  let temporal: TestWorkflowEnvironment | undefined;
  let s3: Awaited<ReturnType<typeof startS3Server>> | undefined;
  const stop = async () => {
    await s3?.stop();
    await temporal?.teardown();
    await postgres.after();
  };
  try {
    await postgres.before();
    const databaseUrl = await postgres.createDatabase("scale_out");
    if (options.temporal) temporal = await startTemporalDevServer();
    s3 = await startS3Server();
    const bucket = s3;
    return {
      env: {
        NODEFLEET_DATABASE_URL: databaseUrl,
        NODEFLEET_API_STACK_BACKEND_URL: bucket.backendUrl("api-stacks"),
        AWS_ACCESS_KEY_ID: "nodefleet-local",
        AWS_SECRET_ACCESS_KEY: "nodefleet-local-secret",
        ...(temporal ? { NODEFLEET_TEMPORAL_ADDRESS: temporal.address } : {}),
      },
      stateKeys: () => bucket.keys("api-stacks"),
      ...(temporal ? { temporal, workflowExecutions: () => countExecutions(temporal!) } : {}),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function countExecutions(temporal: TestWorkflowEnvironment): Promise<number> {
  let count = 0;
  for await (const execution of temporal.client.workflow.list()) if (execution.status.name !== "CONTINUED_AS_NEW") count += 1;
  return count;
}
