/**
 * `nodefleet serve --stack NAME [--engine automation|simulated] [--data-dir DIR] [--port N] [--host H]`:
 * the scaling API for the cluster of that stack (stackService.ts), or, given several `--stack` or a
 * pattern, for every cluster of those stacks behind one listener (clusterHosts.ts, clusterFront.ts).
 * Without cloud credentials the simulated engine is the default, announced loudly. Logs (pino:
 * readable lines at a terminal, JSON lines otherwise, or as --log-format says) go to stderr and
 * carry no secrets. A port that cannot be listened on is refused before a data directory is created.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { InvalidArgumentError, Option, type Command } from "commander";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import { buildClusterFront } from "../api/clusterFront";
import { ServiceMetrics } from "../api/serviceMetrics";
import { readTlsFiles, tlsFilesFromEnv } from "../api/tlsFiles";
import { errorMessage } from "../../components/shared/errorMessage";
import { projectRoot } from "../stackConfigFile";
import { walSyncOf } from "../store/walSync";
import { ClusterHosts } from "./clusterHosts";
import { LOG_FORMATS, type LogFormat } from "./logFormat";
import { assertCanListen, portProblem } from "./portCheck";
import { servesOneStack, stackArgumentProblem } from "./servedStacks";
import { serviceLogger } from "./serviceLogger";
import { openRunScheduler, positiveIntEnv, startStackService, type StackService } from "./stackService";
import type { TemporalRuns } from "../temporal/temporalRuns";
import { clusterEnvironment } from "./clusterCredentials";

export interface ServeOptions {
  /** Stack names and patterns (`prod-*`); one name serves that stack alone, as it always has. */
  readonly stacks: readonly string[];
  readonly engine?: "automation" | "simulated";
  /** One stack's own directory; with several, each stack's is `<dataDir>/<stack>`. */
  readonly dataDir: string;
  readonly port: number;
  readonly host: string;
  /** Default: NODEFLEET_LOG_FORMAT, else pretty at a terminal and JSON lines elsewhere (logFormat.ts). */
  readonly logFormat?: LogFormat;
}

/** One stack: its service, then signals, then the port. */
async function serve(options: ServeOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const logger = serviceLogger(env, 2, options.logFormat ? { format: options.logFormat } : {});
  const stack = options.stacks[0]!;
  const scheduler = await openRunScheduler(env, logger);
  let service: StackService;
  try {
    service = await startStackService(
      {
        stack,
        dataDir: options.dataDir,
        listen: { host: options.host, port: options.port },
        ...(options.engine ? { engine: options.engine } : {}),
        ...(scheduler ? { runScheduler: scheduler } : {}),
      },
      clusterEnvironment(env, stack),
      logger,
    );
  } catch (error) {
    await scheduler?.close();
    throw error;
  }
  stopOnSignals(service, logger, scheduler);
  await listen(service, options, logger, scheduler);
}

/**
 * Several stacks: the front listens first (readyz says which clusters are still starting), then
 * each cluster starts in its own data directory, and the stacks/ folder is read again every
 * NODEFLEET_STACKS_RECHECK_MS.
 */
async function serveClusters(options: ServeOptions, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const logger = serviceLogger(env, 2, options.logFormat ? { format: options.logFormat } : {});
  const recheckMs = positiveIntEnv(env, "NODEFLEET_STACKS_RECHECK_MS", 10_000);
  const tls = tlsFilesFromEnv(env);
  if (tls) readTlsFiles(tls);
  await assertCanListen(options.host, options.port);
  const dataDir = path.resolve(options.dataDir);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const scheduler = await openRunScheduler(env, logger);
  const hosts = new ClusterHosts({
    stacks: options.stacks,
    stacksDir: path.join(projectRoot(), "stacks"),
    dataDir,
    ...(options.engine ? { engine: options.engine } : {}),
    // Read at each cluster's start: a folder added with its stack file takes effect with it.
    start: (stackOptions, stackLogger) =>
      startStackService(
        { ...stackOptions, ...(scheduler ? { runScheduler: scheduler } : {}) },
        clusterEnvironment(env, stackOptions.stack),
        stackLogger,
      ),
    recheckMs,
    logger,
  });
  const front = await buildClusterFront({ clusters: () => hosts.list(), metrics: new ServiceMetrics(), logger, ...(tls ? { tls } : {}) });
  front.addHook("onClose", async () => hosts.stop());
  const shutdown = closeOnSignals(front, logger, () => {}, scheduler);
  scheduler?.onFailure(() => shutdown("Temporal worker failed", 1));
  let address: string;
  try {
    address = await front.listen({ host: options.host, port: options.port });
  } catch (error) {
    await front.close();
    await scheduler?.close();
    throw portProblem(error, options.host, options.port);
  }
  const named = options.stacks.join(", ");
  logger.info({ address, stacks: options.stacks, dataDir }, "nodefleet scaling API listening for several clusters");
  process.stderr.write(`nodefleet scaling API for the clusters of stacks ${named} listening on ${address}\n`);
  await hosts.start();
}

/**
 * SIGTERM and SIGINT close the server once (after `beforeClose`), then the Temporal worker (its
 * activities are the server's runs, finished or abandoned by then), then end the process; the
 * returned shutdown serves other reasons to stop.
 */
function closeOnSignals(
  app: FastifyInstance,
  logger: Logger,
  beforeClose: () => void = () => {},
  scheduler?: TemporalRuns,
): (reason: string, exitCode?: number) => void {
  let closing = false;
  const shutdown = (reason: string, exitCode = 0) => {
    if (closing) return;
    closing = true;
    logger.info({ signal: reason }, "shutting down: finishing or abandoning the engine runs in progress");
    beforeClose();
    app
      .close()
      .then(() => scheduler?.close())
      .then(
        () => process.exit(exitCode),
        (error: unknown) => {
          logger.error({ err: errorMessage(error) }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  return shutdown;
}

/** One stack's service: the signals, and a failed store sync, which stops it with a non-zero exit. */
function stopOnSignals(service: StackService, logger: Logger, scheduler: TemporalRuns | undefined): void {
  // Before the close: a run waiting for the first apply must not hold the shutdown.
  const shutdown = closeOnSignals(service.app, logger, () => service.firstApply?.abandon(), scheduler);
  // A worker that failed for good runs nothing more here: a restart connects again.
  scheduler?.onFailure(() => shutdown("Temporal worker failed", 1));
  // A failed fsync leaves the disk's content unknown: stop, so that a restart recovers from what is on it.
  walSyncOf(service.database).onFailure(() => shutdown("store sync failed", 1));
}

/** Listens, and only then starts the first apply; a port that turns out taken releases everything. */
async function listen(service: StackService, options: ServeOptions, logger: Logger, scheduler: TemporalRuns | undefined): Promise<void> {
  const { app, firstApply, config, dataDir } = service;
  let address: string;
  try {
    address = await app.listen({ host: options.host, port: options.port });
  } catch (error) {
    // The reconciler and catalog started in onReady: stop them and release the data directory, or the process lingers.
    firstApply?.abandon();
    await app.close();
    await scheduler?.close();
    throw portProblem(error, options.host, options.port);
  }
  firstApply?.start();
  const clusterId = config.fleet.cluster.id;
  logger.info({ address, stack: options.stacks[0], cluster: clusterId, engine: config.kind, dataDir }, "nodefleet scaling API listening");
  process.stderr.write(`nodefleet scaling API for cluster ${clusterId} listening on ${address} (engine: ${config.kind})\n`);
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError("a port is an integer from 0 to 65535");
  return port;
}

function collectStack(value: string, previous: string[] | undefined): string[] {
  const problem = stackArgumentProblem(value);
  if (problem) throw new InvalidArgumentError(problem);
  return [...(previous ?? []), value];
}

export function registerServeCommand(program: Command): void {
  program
    .command("serve")
    .description("run the scaling API for the cluster of a stack, or for the clusters of several")
    .requiredOption(
      "--stack <name>",
      "stack whose stacks/Pulumi.<name>.yaml declares the cluster and its autoscaled pools; repeat it, or give a pattern such as 'prod-*', to serve several clusters (each in <data-dir>/<stack>)",
      collectStack,
    )
    .option("--engine <kind>", "automation or simulated (default: simulated without HCLOUD_TOKEN)", (value) => {
      if (value !== "automation" && value !== "simulated") throw new InvalidArgumentError("engine must be automation or simulated");
      return value;
    })
    .option("--data-dir <dir>", "store, lock, engine state (one service per directory)", "./.nodefleet")
    .option("--port <n>", "port to listen on", parsePort, 8080)
    .option("--host <host>", "address to listen on", "127.0.0.1")
    .addOption(
      new Option(
        "--log-format <format>",
        "log lines on stderr: pretty (readable) or json (default: NODEFLEET_LOG_FORMAT, else pretty at a terminal, json otherwise)",
      ).choices(LOG_FORMATS),
    )
    .action(
      async (opts: {
        stack: string[];
        engine?: "automation" | "simulated";
        dataDir: string;
        port: number;
        host: string;
        logFormat?: LogFormat;
      }) => {
        const options: ServeOptions = {
          stacks: opts.stack,
          dataDir: opts.dataDir,
          port: opts.port,
          host: opts.host,
          ...(opts.engine ? { engine: opts.engine } : {}),
          ...(opts.logFormat ? { logFormat: opts.logFormat } : {}),
        };
        await (servesOneStack(options.stacks) ? serve(options) : serveClusters(options));
      },
    );
}
