/**
 * A `serve` process in the scale-out mode's Temporal part: its client signals the stack-runs
 * workflow of each changed API stack (the reconcilers' RunDispatch), and its worker, polling the
 * task queue beside every other replica's, runs workflow tasks and `runBatch` activities. An activity
 * for a cluster this process serves is that shard's reconciler run (ClusterShards.runDispatched);
 * one for a cluster it does not serve (yet) fails, and Temporal retries it, on any worker.
 */
import { ApplicationFailure, IllegalStateError } from "@temporalio/common";
import { Client, Connection } from "@temporalio/client";
import { DefaultLogger, NativeConnection, Runtime, type LogEntry, type Worker } from "@temporalio/worker";
import type { Logger } from "pino";
import type { DispatchedRuns, RunDispatch, RunScheduler } from "../reconciler/runScheduler";
import { errorMessage } from "../../components/shared/errorMessage";
import { signalClaimsChanged, type StackRunsTarget } from "./stackRunsClient";
import type { StackRunsSettings } from "./stackRunsContract";
import { createStackRunsWorker } from "./stackRunsWorker";
import type { TemporalSettings } from "./temporalSettings";

export interface TemporalRunsOptions {
  readonly settings: TemporalSettings;
  /** Taken by a stack's workflow when a signal starts it (the service's batch window and retry backoff). */
  readonly runs: Partial<StackRunsSettings>;
  /** How long a shutdown lets the activities under way finish before cancelling them. */
  readonly shutdownGraceMs: number;
  readonly logger: Logger;
}

/** The SDK's logs (its own and its core's) as the service's, at WARN and above; its signal handlers off (serve has its own). */
function installRuntime(logger: Logger): void {
  const log = logger.child({ component: "temporal" });
  const forward = (entry: LogEntry) => {
    const meta = entry.meta ?? {};
    if (entry.level === "ERROR") log.error(meta, entry.message);
    else log.warn(meta, entry.message);
  };
  try {
    Runtime.install({
      logger: new DefaultLogger("WARN", forward),
      telemetryOptions: { logging: { filter: { core: "WARN" }, forward: {} } },
      shutdownSignals: [],
    });
  } catch (error) {
    // Installed already in this process (a test's runtime): that one's logging stands.
    if (!(error instanceof IllegalStateError)) throw error;
  }
}

export class TemporalRuns implements RunScheduler {
  private readonly clusters = new Map<string, DispatchedRuns>();
  private worker: Worker | undefined;
  private running: Promise<void> | undefined;
  private failed: ((error: Error) => void) | undefined;

  private constructor(
    private readonly options: TemporalRunsOptions,
    private readonly connection: Connection,
    private readonly nativeConnection: NativeConnection,
    private readonly target: StackRunsTarget,
  ) {}

  /** Connects (a frontend that cannot be reached fails the start, naming the address) and starts the worker. */
  static async open(options: TemporalRunsOptions): Promise<TemporalRuns> {
    const { settings, logger } = options;
    installRuntime(logger);
    const tls = settings.tls
      ? {
          ...(settings.tls.serverRootCa ? { serverRootCACertificate: settings.tls.serverRootCa } : {}),
          ...(settings.tls.clientCertificate ? { clientCertPair: settings.tls.clientCertificate } : {}),
        }
      : undefined;
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address: settings.address, ...(tls ? { tls } : {}) });
      const nativeConnection = await NativeConnection.connect({ address: settings.address, ...(tls ? { tls } : {}) });
      const client = new Client({ connection, namespace: settings.namespace });
      const runs = new TemporalRuns(options, connection, nativeConnection, {
        client,
        taskQueue: settings.taskQueue,
        settings: options.runs,
      });
      await runs.startWorker();
      return runs;
    } catch (error) {
      await connection?.close();
      throw new Error(`NODEFLEET_TEMPORAL_ADDRESS: could not start on Temporal at ${settings.address}: ${errorMessage(error)}`);
    }
  }

  /** The reconcilers' hand-over: a change signals its stack's workflow, starting it when none is open. */
  readonly dispatch: RunDispatch = {
    changed: async (clusterId, shard, nodeIds) => {
      await signalClaimsChanged(this.target, clusterId, shard, nodeIds);
    },
  };

  /** This process runs `clusterId`'s activities from now on; the returned function stops that. */
  serve(clusterId: string, runs: DispatchedRuns): () => void {
    this.clusters.set(clusterId, runs);
    return () => {
      if (this.clusters.get(clusterId) === runs) this.clusters.delete(clusterId);
    };
  }

  private async startWorker(): Promise<void> {
    const { settings, logger, shutdownGraceMs } = this.options;
    const started = Date.now();
    this.worker = await createStackRunsWorker({
      connection: this.nativeConnection,
      namespace: settings.namespace,
      taskQueue: settings.taskQueue,
      shutdownGraceMs,
      run: async ({ clusterId, shard }, signal) => {
        const served = this.clusters.get(clusterId);
        // Retryable: the cluster may be starting here, or served by another replica.
        if (!served) throw ApplicationFailure.retryable(`cluster ${clusterId} is not served by this worker (yet)`, "ClusterNotServed");
        return { summary: await served.runDispatched(shard, signal) };
      },
    });
    this.running = this.worker.run().catch((error: unknown) => {
      logger.fatal({ err: errorMessage(error) }, "the Temporal worker failed; this replica runs no engine run any more");
      this.failed?.(error instanceof Error ? error : new Error(errorMessage(error)));
    });
    logger.info(
      { temporal: settings.address, namespace: settings.namespace, taskQueue: settings.taskQueue, startedMs: Date.now() - started },
      "engine runs are Temporal workflows; this replica is one of their workers",
    );
  }

  /**
   * Told once if the worker fails for good (Temporal unreachable past the SDK's retries): `serve`
   * then stops with a non-zero exit, so the orchestrator restarts it and it connects again.
   */
  onFailure(failed: (error: Error) => void): void {
    this.failed = failed;
  }

  /** Stops polling, lets the activities under way finish (at most the shutdown grace), then closes the connections. */
  async close(): Promise<void> {
    if (this.worker && this.worker.getState() === "RUNNING") this.worker.shutdown();
    await this.running;
    await this.nativeConnection.close();
    await this.connection.close();
  }
}
