/**
 * What the scale-out mode's replicas share, on loopback, for a run of `serve` replicas on the local
 * cloud: a throwaway PostgreSQL database (NODEFLEET_DATABASE_URL) and the API stacks' state in an
 * S3-compatible bucket (the toolchain's gofakes3, NODEFLEET_API_STACK_BACKEND_URL=s3://…, with
 * credentials it accepts). `env` is what each replica adds to its environment; `stop()` ends both.
 */
import { suitePostgres } from "./postgresServer";
import { startS3Server } from "./s3Server";

export interface ScaleOutBackends {
  readonly env: Record<string, string>;
  /** The keys of the API stacks' state in the bucket (checkpoints, history, locks). */
  stateKeys(): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startScaleOutBackends(runsWhat: string): Promise<ScaleOutBackends> {
  const postgres = suitePostgres(runsWhat);
  await postgres.before();
  try {
    const databaseUrl = await postgres.createDatabase("scale_out");
    const s3 = await startS3Server();
    return {
      env: {
        NODEFLEET_DATABASE_URL: databaseUrl,
        NODEFLEET_API_STACK_BACKEND_URL: s3.backendUrl("api-stacks"),
        AWS_ACCESS_KEY_ID: "nodefleet-local",
        AWS_SECRET_ACCESS_KEY: "nodefleet-local-secret",
      },
      stateKeys: () => s3.keys("api-stacks"),
      async stop() {
        await s3.stop();
        await postgres.after();
      },
    };
  } catch (error) {
    await postgres.after();
    throw error;
  }
}
