/**
 * `buildServer(options)`: the scaling API as a Fastify instance, wired to its store, reconcilers
 * and catalog. Concerns are encapsulated plugins: error handling (root), probes, metrics, OpenAPI,
 * and under /api/v1 rate limiting, authentication and the cluster routes. Closing the instance
 * stops the reconcilers (finishing or abandoning the current run), closes the store and releases
 * the data-directory lock.
 */
import swagger from "@fastify/swagger";
import rateLimit from "@fastify/rate-limit";
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from "fastify";
import fastifyMetrics from "fastify-metrics";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Logger } from "pino";
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { claimProviderId } from "./nodeView";
import { CatalogSource } from "../catalog/catalogSource";
import { OfferingAvailability } from "../catalog/offeringAvailability";
import type { PoolImageSource } from "../catalog/poolImageSource";
import type { StackConfigValue, StackEngine } from "../engine/stackEngine";
import { apiEngineStateOf, apiStackDefinition } from "../reconciler/apiStack";
import type { GitStackPrerequisites } from "../reconciler/gitStackPrerequisites";
import type { BatchWindowConfig, RetryConfig } from "../reconciler/batchWindow";
import { ClusterReconciler } from "../reconciler/clusterReconciler";
import { ClusterShards } from "../reconciler/clusterShards";
import type { RunScheduler } from "../reconciler/runScheduler";
import { GuardFingerprints } from "../store/guardFingerprints";
import { LearnedCapacities } from "../store/learnedCapacities";
import { ClaimStore } from "../store/claimStore";
import { SqliteClaimRepository, type ClaimRepository } from "../store/claimRepository";
import type { SharedStores } from "../store/postgresStores";
import type { ClaimChangeListener } from "../store/claimChanges";
import type { RunStore } from "../store/runStore";
import { SqliteRunStore } from "../store/sqliteRunStore";
import { acquireDataDirLock, type DataDirLock } from "../store/dataDirLock";
import { openDatabase, type Db } from "../store/database";
import { walSyncOf } from "../store/walSync";
import { OperationLog } from "../store/operationLog";
import { TokenVerifier, parseApiTokens, type TokenEntry } from "./apiTokens";
import { ApiError } from "./apiError";
import { UNAUTHENTICATED_KEY_PREFIX, authPlugin, rateLimitKey } from "./authPlugin";
import { ServiceAccountTokens, type ServiceAccountTokensArgs } from "./serviceAccountTokens";
import { kubeconfigTokenReview } from "./tokenReview";
import { TlsReloader, readTlsFiles, type TlsFiles } from "./tlsFiles";
import type { Server as HttpsServer } from "node:https";
import { clusterNodeList, serviceKubeconfig } from "./clusterNodeList";
import { ClusterService } from "./clusterService";
import { NodeCapacityWatch } from "./nodeCapacityWatch";
import { DEFAULT_HTTP_TIMEOUTS, fastifyTimeoutOptions, type HttpTimeouts } from "./httpTimeouts";
import { strictJsonBodies } from "./jsonBodyParser";
import { clientErrorHandler, frameworkErrorHandler, registerErrorHandling } from "./errorHandler";
import { clusterRoutes } from "./routes/clusterRoutes";
import { nodeRoutes } from "./routes/nodeRoutes";
import { droppedCreateAnswers } from "./droppedCreateAnswers";
import { probeRoutes, type Readiness } from "./routes/probeRoutes";
import { ServiceMetrics } from "./serviceMetrics";
import { openApiComponents, openApiDocumentation, openApiTransform } from "./openApiDocument";
import { loggedRequest } from "./redactedUrl";
import { DebugRequestLogs } from "./requestLogController";
import { errorMessage } from "../../components/shared/errorMessage";

const API_PREFIX = "/api/v1";
const PROBE_URLS = new Set(["/healthz", "/readyz", "/metrics"]);

export interface BuildServerOptions {
  /** Holds nodefleet.db and the lock; one service per directory. */
  readonly dataDir: string;
  readonly engine: StackEngine;
  /** The stack's fleet spec, current (re-read when the stack file changes). */
  readonly fleet: () => FleetSpec;
  /** The git stack's config values handed to the API stack's program. */
  readonly stackConfig: () => Readonly<Record<string, StackConfigValue>>;
  /** `<clusterId>:<token>,...` (NODEFLEET_API_TOKENS) or parsed entries. */
  readonly tokens: string | readonly TokenEntry[];
  /**
   * Projected ServiceAccount tokens (NODEFLEET_SERVICE_ACCOUNT): the one ServiceAccount accepted,
   * reviewed by default against the served stack's kubeconfig (`review` replaces that, for tests).
   * Without it only the static tokens are accepted.
   */
  readonly serviceAccountTokens?: Omit<ServiceAccountTokensArgs, "clusterId" | "review"> &
    Partial<Pick<ServiceAccountTokensArgs, "review">>;
  /** Compiled module of the API stack's program (default dist/stacks/autoscaledProgram.js). */
  readonly programModule?: string;
  readonly batch?: BatchWindowConfig;
  readonly retry?: RetryConfig;
  /** How long after admission a create's transient failures are retried before it fails (default 30 min). */
  readonly createDeadlineMs?: number;
  /** Members of one pool per API stack shard (apiShard.ts; default 50). */
  readonly membersPerShard?: number;
  /** Engine runs of the cluster's shards at once (clusterShards.ts; default 2). */
  readonly concurrentShardRuns?: number;
  readonly previewGuard?: boolean;
  /**
   * The git stack's network and firewall, looked up once per batch (the automation engine with a
   * Hetzner client; else the program looks them up); while missing, readyz says so and creates are refused.
   */
  readonly prerequisites?: GitStackPrerequisites;
  /**
   * Resolves once the engine can run (the simulated engine first applies the git stack, the
   * automation engine installs its provider plugins); readyz is 503 until then. A rejection is
   * final: readyz is degraded with its message, creates are refused with it and no run starts.
   */
  readonly engineReady?: Promise<unknown>;
  /** What readyz says while `engineReady` is pending (default: applying the git stack). */
  readonly engineStarting?: string;
  readonly catalog?: CatalogSource;
  /** Resolves autoscaled pools' `imageSelector` through Hetzner (default: none, so such pools admit nothing). */
  readonly images?: PoolImageSource;
  readonly availability?: OfferingAvailability;
  /** How long a sold-out create keeps its offering unavailable (default 30 min). */
  readonly unavailableForMs?: number;
  /** How long a quota, unusable-image or full-pool failure backs its offering or pool off (default 5 min). */
  readonly backoffForMs?: number;
  /**
   * HTTPS with the certificate and key in these files (NODEFLEET_TLS_CERT_FILE/KEY_FILE), reloaded
   * when they change (polled every `reloadIntervalMs`, default 5 s); plain HTTP without.
   */
  readonly tls?: TlsFiles & { readonly reloadIntervalMs?: number };
  /** Connection, header, request and keep-alive timeouts (defaults in httpTimeouts.ts). */
  readonly httpTimeouts?: Partial<HttpTimeouts>;
  /** Largest request body in bytes (default 64 KiB). */
  readonly bodyLimit?: number;
  /** Requests per minute per token (default 6000: Karpenter repeats Delete every 5 s and polls Get per node); false disables. */
  readonly rateLimitPerMinute?: number | false;
  /** Requests per minute per client address that fail authentication (default 60; applies even when rateLimitPerMinute is false). */
  readonly unauthenticatedPerMinute?: number;
  readonly logger?: Logger | false;
  /** How long close() lets a run in progress finish before abandoning it (default 30 s). */
  readonly shutdownGraceMs?: number;
  readonly metrics?: ServiceMetrics;
  /** The data-directory lock when the caller took it first (before starting an engine on the directory); released on close. */
  readonly lock?: DataDirLock;
  /** The store when the caller opened it first (openDatabase with the API stack as engineStack); closed on close. */
  readonly database?: Db;
  /**
   * Claims, engine runs, operations and guard fingerprints in a database several replicas share
   * (PostgreSQL: postgresStores.ts, NODEFLEET_DATABASE_URL); closed on close. The data directory's
   * store then keeps only what each replica learns for itself. Default: all in the embedded store.
   */
  readonly shared?: SharedStores;
  /**
   * Engine runs scheduled outside the process (the scale-out mode's Temporal workflows,
   * NODEFLEET_TEMPORAL_ADDRESS; needs `shared`): every change is handed to it, and it hands the runs
   * back to whichever replica's worker takes them. Default: each shard's reconciler runs its own.
   */
  readonly runScheduler?: RunScheduler;
  /**
   * Builds the claim store over the database (default: the SQLite ClaimStore). Benchmarks pass a
   * stand-in to measure what the service costs without its store; a service never should.
   */
  readonly claimStore?: (database: Db) => ClaimStore;
  /**
   * Learning node capacity from the cluster's Nodes (nodeCapacityWatch.ts): how to list them
   * (default: with the stack's kubeconfig, except on the simulated engine, which has no cluster)
   * and how often (default 15 s); false turns it off.
   */
  /**
   * Fault injection (NODEFLEET_SIM_DROP_CREATE_ANSWERS): the first this many committed creates get
   * their connection destroyed instead of an answer (default 0, none).
   */
  readonly dropCreateAnswers?: number;
  readonly nodeCapacity?: false | { readonly listNodes?: () => Promise<unknown>; readonly intervalMs?: number };
}

export interface NodefleetContext {
  readonly clusters: ReadonlyMap<string, ClusterService>;
  readonly metrics: ServiceMetrics;
  /** The embedded store (in scale-out mode, `shared` holds the claims instead). */
  readonly store: ClaimStore;
  /** The claims as the service reads and writes them, wherever they are. */
  readonly claims: ClaimRepository;
  readonly availability: OfferingAvailability;
  /** What readyz answers, for the front of a service with several clusters (clusterFront.ts). */
  readonly readiness: () => Readiness;
}

declare module "fastify" {
  interface FastifyInstance {
    nodefleet: NodefleetContext;
  }
}

export async function buildServer(options: BuildServerOptions): Promise<FastifyInstance> {
  // Configuration errors first, before the directory is locked.
  const tokens = typeof options.tokens === "string" ? parseApiTokens(options.tokens) : options.tokens;
  const lock = options.lock ?? acquireDataDirLock(options.dataDir);
  let db;
  try {
    const clusterId = options.fleet().cluster.id;
    // The claims in a shared database are not lost when the embedded store is empty beside the engine state.
    db =
      options.database ??
      openDatabase(options.dataDir, options.shared ? {} : { engineState: () => apiEngineStateOf(options.dataDir, clusterId) });
  } catch (error) {
    await options.shared?.close();
    lock.release();
    throw error;
  }
  try {
    return await compose(options, tokens, db, lock);
  } catch (error) {
    db.close();
    await options.shared?.close();
    lock.release();
    throw error;
  }
}

/** The service as a list of steps: its parts, the cluster it serves, the HTTP server, readiness, routes and lifecycle. */
async function compose(
  options: BuildServerOptions,
  tokens: readonly TokenEntry[],
  database: Db,
  lock: DataDirLock,
): Promise<FastifyInstance> {
  const parts = serviceParts(options, database);
  const { store, claims, metrics, availability, logger } = parts;
  const clusterId = options.fleet().cluster.id;
  const engineStart = watchEngineStart(options.engineReady);
  const { reconciler, clusters, capacityWatch } = servedCluster(options, parts, clusterId, engineStart);

  const app = httpServer(options, logger);
  if (options.tls) reloadTlsFiles(app, options.tls, logger, metrics);
  const lifecycle = { closing: false };
  const syncs = walSyncOf(database);
  syncs.onFailure((failure) => logger?.fatal({ err: failure.message }, "the store cannot trust its disk any more: restart the service"));
  const readiness = readinessOf({ options, parts, clusterId, reconciler, engineStart, syncs, lifecycle });
  app.decorate("nodefleet", { clusters, metrics, store, claims, availability, readiness });
  metrics.clusterStates ??= () => [{ cluster: clusterId, state: readiness().status }];

  await registerRoutes(app, {
    clusters,
    metrics,
    readiness,
    tokens: new TokenVerifier(tokens),
    ...(options.serviceAccountTokens ? { serviceAccounts: serviceAccountTokensOf(options, clusterId, metrics) } : {}),
    rateLimitPerMinute: options.rateLimitPerMinute ?? 6000,
    unauthenticatedPerMinute: options.unauthenticatedPerMinute ?? 60,
    ...(options.dropCreateAnswers ? { dropCreateAnswer: droppedCreateAnswers(options.dropCreateAnswers) } : {}),
  });
  runWithServer(app, { options, parts, reconciler, capacityWatch, lifecycle, database, lock });
  return app;
}

/** The projected-token check of the served cluster, reviewing against the stack's kubeconfig as it is at each review. */
function serviceAccountTokensOf(options: BuildServerOptions, clusterId: string, metrics: ServiceMetrics): ServiceAccountTokens {
  const settings = options.serviceAccountTokens!;
  return new ServiceAccountTokens({
    ...settings,
    clusterId,
    observe: (result) => metrics.tokenReview(result),
    review: settings.review ?? kubeconfigTokenReview(() => serviceKubeconfig(options.stackConfig()), clusterId),
  });
}

/** What the cluster and the HTTP layer share, built once over the database. */
interface ServiceParts {
  readonly store: ClaimStore;
  /** The claims as the service and the reconcilers read and write them: the embedded store's, or the shared database's. */
  readonly claims: ClaimRepository;
  /** Where engine runs are begun and recorded, with the operation log and the guard fingerprints. */
  readonly runs: RunStore;
  readonly learned: LearnedCapacities;
  /** Engine runs an unclean stop cut short, marked abandoned at start (their claims are reconciled again). */
  readonly abandoned: number;
  readonly metrics: ServiceMetrics;
  readonly availability: OfferingAvailability;
  readonly catalog: CatalogSource;
  readonly logger: Logger | undefined;
}

/** The store and its operation log, metrics, availability and catalog: the caller's, else the defaults. */
function serviceParts(options: BuildServerOptions, database: Db): ServiceParts {
  const store = options.claimStore?.(database) ?? new ClaimStore(database);
  const learned = new LearnedCapacities(database);
  const { shared } = options;
  const operations = new OperationLog(database);
  // A shared database's runs may be another replica's, still going: its own next run of the shard abandons them (postgresRunStore.ts).
  const abandoned = shared
    ? 0
    : operations.abandonUnfinished("the service stopped during this run (crash or kill); its claims are reconciled again");
  const claims = shared?.claims ?? new SqliteClaimRepository(store);
  const runs = shared?.runs ?? new SqliteRunStore(store, operations, new GuardFingerprints(database));
  const metrics = options.metrics ?? new ServiceMetrics();
  const availability = options.availability ?? new OfferingAvailability(options.unavailableForMs, Date.now, options.backoffForMs);
  const catalog = options.catalog ?? new CatalogSource({ availability });
  const logger = options.logger || undefined;
  return { store, claims, runs, learned, abandoned, metrics, availability, catalog, logger };
}

/** The engine's start as readyz reports it: starting until `engineReady` settles, then ready or failed (and why). */
interface EngineStart {
  state: "starting" | "ready" | "failed";
  error?: string;
}

/** Follows `engineReady`, so readiness can say whether the engine can run yet. */
function watchEngineStart(engineReady: Promise<unknown> | undefined): EngineStart {
  const start: EngineStart = { state: engineReady ? "starting" : "ready" };
  engineReady?.then(
    () => (start.state = "ready"),
    (error: unknown) => {
      start.state = "failed";
      start.error = errorMessage(error);
    },
  );
  return start;
}

/** One shard's reconciler: its API stack per run, sold-out offerings marked unavailable, runs counted. */
function shardReconciler(
  options: BuildServerOptions,
  parts: ServiceParts,
  clusterId: string,
  shard: string,
  runGate: <T>(run: () => Promise<T>) => Promise<T>,
): ClusterReconciler {
  const { claims, runs, metrics, availability, logger } = parts;
  return new ClusterReconciler({
    clusterId,
    shard,
    runGate,
    store: claims,
    runs,
    engine: options.engine,
    stackFor: async (members) => {
      const shared = members.length > 0 ? await options.prerequisites?.resources() : undefined;
      return apiStackDefinition({
        clusterId,
        shard,
        members,
        config: options.stackConfig(),
        allowMissingKubeconfig: options.engine.kind === "simulated",
        ...(options.programModule ? { programModule: options.programModule } : {}),
        ...(shared ? { shared } : {}),
      });
    },
    ...(options.batch ? { batch: options.batch } : {}),
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.createDeadlineMs !== undefined ? { createDeadlineMs: options.createDeadlineMs } : {}),
    ...(options.previewGuard !== undefined ? { previewGuard: options.previewGuard } : {}),
    ...(options.engineReady ? { ready: options.engineReady } : {}),
    onLaunchBackoff: (clusterId, mark) => {
      if (mark.scope === "pool") availability.markPoolUnavailable(clusterId, mark.pool, mark.reason, mark.kind);
      else availability.markUnavailable(mark.serverType, mark.location, mark.reason, mark.kind);
      metrics.launchBackoff(clusterId, mark.kind, mark.scope);
      logger?.warn(
        {
          clusterId,
          pool: mark.pool,
          serverType: mark.serverType,
          location: mark.location,
          kind: mark.kind,
          scope: mark.scope,
          forMs: availability.periodOf(mark.kind),
        },
        mark.scope === "pool"
          ? "create failed for the whole pool; pool backed off"
          : "create failed for its offering; offering marked unavailable",
      );
    },
    observer: metrics,
    ...(logger ? { logger } : {}),
    ...(options.runScheduler ? { dispatch: options.runScheduler.dispatch } : {}),
  });
}

/** Where the service reads the cluster's Nodes for their capacity, if anywhere. */
function capacityWatchOf(options: BuildServerOptions, parts: ServiceParts, clusterId: string): NodeCapacityWatch | undefined {
  const settings = options.nodeCapacity ?? {};
  // What a Node reports is learned against the embedded store's claims; a shared database's are not there.
  if (settings === false || options.shared) return undefined;
  const listNodes =
    settings.listNodes ?? (options.engine.kind === "simulated" ? undefined : () => clusterNodeList(options.stackConfig(), clusterId));
  if (!listNodes) return undefined;
  const { store, learned, logger } = parts;
  return new NodeCapacityWatch({
    clusterId,
    members: {
      claimOf: (nodeId) => store.get(clusterId, nodeId),
      providerIdOf: (claim) => claimProviderId(options.fleet().cluster, claim),
    },
    hasMembers: () => store.countByStatus(clusterId).RUNNING > 0,
    learned,
    listNodes,
    ...(settings.intervalMs !== undefined ? { intervalMs: settings.intervalMs } : {}),
    ...(logger ? { logger } : {}),
  });
}

/** The one cluster served: its reconciler and its service, built apart from the HTTP server and counted in the metrics. */
function servedCluster(
  options: BuildServerOptions,
  parts: ServiceParts,
  clusterId: string,
  engineStart: EngineStart,
): { reconciler: ClusterShards; clusters: ReadonlyMap<string, ClusterService>; capacityWatch: NodeCapacityWatch | undefined } {
  const { claims, runs, metrics, availability, catalog, learned, logger } = parts;
  const reconciler = new ClusterShards({
    clusterId,
    store: claims,
    onReadFailure: (error) => logger?.error({ err: error, cluster: clusterId }, "could not read the shards with unfinished claims"),
    ...(options.concurrentShardRuns !== undefined ? { concurrentRuns: options.concurrentShardRuns } : {}),
    reconcilerFor: (shard, runGate) => shardReconciler(options, parts, clusterId, shard, runGate),
  });
  const service = new ClusterService(clusterId, {
    fleet: options.fleet,
    store: claims,
    runs,
    reconciler,
    ...(options.membersPerShard !== undefined ? { membersPerShard: options.membersPerShard } : {}),
    catalog: () => catalog.current(),
    availability,
    learned: (key) => learned.get(clusterId, key),
    refusal: () => (engineStart.state === "failed" ? `the engine cannot run: ${engineStart.error}` : options.prerequisites?.refusal()),
    ...(options.images ? { images: options.images } : {}),
  });
  metrics.addCluster({ clusterId, nodesByStatus: () => claims.countByStatus(clusterId), queueDepth: () => reconciler.queueDepth() });
  return { reconciler, clusters: new Map([[clusterId, service]]), capacityWatch: capacityWatchOf(options, parts, clusterId) };
}

/** Follows the certificate files while the server runs: a renewed pair serves new connections. */
export function reloadTlsFiles(
  app: FastifyInstance,
  tls: NonNullable<BuildServerOptions["tls"]>,
  logger: Logger | undefined,
  metrics: ServiceMetrics,
): void {
  const reloader = new TlsReloader({
    files: tls,
    observe: (result) => metrics.tlsReload(result),
    apply: (pair) => (app.server as unknown as HttpsServer).setSecureContext(pair),
    ...(tls.reloadIntervalMs !== undefined ? { intervalMs: tls.reloadIntervalMs } : {}),
    ...(logger ? { logger } : {}),
  });
  reloader.start();
  app.addHook("onClose", async () => reloader.stop());
}

/** The bare Fastify instance: logging, body limit, timeouts and error handlers, no routes yet. */
export function httpServer(
  options: Pick<BuildServerOptions, "tls" | "bodyLimit" | "httpTimeouts">,
  logger: Logger | undefined,
): FastifyInstance {
  // The https typing only changes the server's type: the routes and hooks are the same.
  return Fastify({
    ...(options.tls ? { https: readTlsFiles(options.tls) } : {}),
    // Request logs carry the URL: its query values (a token sent as ?token=) are redacted. The
    // serializer is set once, on the service's logger: every request's child logger inherits it
    // (a childLoggerFactory would build and validate a logger per request, even without logging).
    ...(logger ? { loggerInstance: logger.child({}, { serializers: { req: loggedRequest } }) as FastifyBaseLogger } : { logger: false }),
    // Per-request lines at debug, not info (requestLogController.ts).
    logController: new DebugRequestLogs(),
    bodyLimit: options.bodyLimit ?? 64 * 1024,
    // Our own 503 in the error shape instead (see the onRequest hook in runWithServer).
    return503OnClosing: false,
    frameworkErrors: frameworkErrorHandler,
    clientErrorHandler,
    ...fastifyTimeoutOptions({ ...DEFAULT_HTTP_TIMEOUTS, ...options.httpTimeouts }),
    forceCloseConnections: "idle",
  }) as unknown as FastifyInstance;
}

/** What readyz reads: the service's parts and states, each owned elsewhere. */
interface ReadinessSources {
  readonly options: BuildServerOptions;
  readonly parts: ServiceParts;
  readonly clusterId: string;
  readonly reconciler: ClusterShards;
  readonly engineStart: EngineStart;
  readonly syncs: ReturnType<typeof walSyncOf>;
  readonly lifecycle: { readonly closing: boolean };
}

/** readyz's answer: stopping, starting, degraded (saying why) or ready, with a stale catalog named. */
function readinessOf({ options, parts, clusterId, reconciler, engineStart, syncs, lifecycle }: ReadinessSources): () => Readiness {
  const { store, catalog } = parts;
  const serving = (): Readiness => {
    if (engineStart.state === "failed") return { status: "degraded", details: { engine: engineStart.error } };
    const notApplied = options.prerequisites?.refusal();
    if (notApplied) return { status: "degraded", details: { gitStack: notApplied } };
    const degradation = reconciler.degraded;
    if (degradation) return { status: "degraded", details: { [clusterId]: degradation } };
    // No run had anything to do, but the writes fail: creates are answered 503.
    const writeFailure = store.writeFailure;
    if (writeFailure)
      return {
        status: "degraded",
        details: { store: { reason: `the last write failed: ${writeFailure.reason}`, since: writeFailure.since } },
      };
    return { status: "ready", details: { engine: options.engine.kind, busy: reconciler.busy } };
  };
  return (): Readiness => {
    if (lifecycle.closing) return { status: "stopping", details: { reason: "the service is shutting down" } };
    if (syncs.failed) return { status: "stopping", details: { reason: `${syncs.failed.message}: restart the service` } };
    if (engineStart.state === "starting")
      return { status: "starting", details: { engine: options.engineStarting ?? "applying the git stack before the first run" } };
    // Readiness never waits on Hetzner: a catalog not (yet) read is served stale and named here.
    const stale = catalog.staleness();
    const state = serving();
    return stale ? { ...state, details: { ...state.details, catalog: stale } } : state;
  };
}

/** The background parts start when the server is ready and stop when it closes, releasing the store and the lock last. */
function runWithServer(
  app: FastifyInstance,
  {
    options,
    parts,
    reconciler,
    capacityWatch,
    lifecycle,
    database,
    lock,
  }: {
    options: BuildServerOptions;
    parts: ServiceParts;
    reconciler: ClusterShards;
    capacityWatch: NodeCapacityWatch | undefined;
    lifecycle: { closing: boolean };
    database: Db;
    lock: DataDirLock;
  },
): void {
  const { catalog, abandoned, logger } = parts;
  let otherReplicas: ClaimChangeListener | undefined;
  let stopServingRuns: (() => void) | undefined;
  app.addHook("onReady", async () => {
    catalog.start();
    options.prerequisites?.start();
    stopServingRuns = options.runScheduler?.serve(options.fleet().cluster.id, reconciler);
    reconciler.start();
    capacityWatch?.start();
    if (abandoned > 0) logger?.warn({ abandoned }, "engine runs were cut short by an unclean stop; their claims are reconciled again");
    if (options.shared) otherReplicas = await listenToOtherReplicas(options.shared, options.fleet().cluster.id, reconciler, logger);
  });
  // Before in-flight requests are awaited: creates waiting (waitSeconds) answer now instead of holding the shutdown.
  app.addHook("preClose", async () => {
    lifecycle.closing = true;
    reconciler.beginShutdown();
  });
  refuseWhileClosing(app, lifecycle);
  app.addHook("onClose", async () => {
    catalog.stop();
    options.prerequisites?.stop();
    await reconciler.stop(options.shutdownGraceMs ?? 30_000);
    stopServingRuns?.();
    await capacityWatch?.stop();
    await otherReplicas?.close();
    database.close();
    await options.shared?.close();
    lock.release();
  });
}

/**
 * The cluster's claim changes made by any replica (claimChanges.ts): a create or delete wakes its
 * shard's runs here too (one replica at a time runs a shard: the run lock; the others find nothing
 * left), and every change wakes the requests waiting on that claim. After a lost connection every
 * shard with unfinished claims is looked at again. With a run scheduler every replica hands the
 * change on (the scheduler's workflow takes them as one), so a replica dying between its commit and
 * its hand-over strands nothing.
 */
function listenToOtherReplicas(
  shared: SharedStores,
  clusterId: string,
  reconciler: ClusterShards,
  logger: Logger | undefined,
): Promise<ClaimChangeListener> {
  return shared.listen({
    onChange: (change) => {
      if (change.clusterId !== clusterId) return;
      if (change.status === "PENDING" || change.status === "TERMINATING") reconciler.notify(change.shard);
      reconciler.emit("claims", [change.nodeId]);
    },
    onListening: () => reconciler.notify(),
    onLost: (error) => logger?.warn({ err: error.message, cluster: clusterId }, "lost the shared database's claim changes; reconnecting"),
  });
}

/** While closing, every request but the probes gets a 503 in the error shape (readyz answers for itself: "stopping"). */
export function refuseWhileClosing(app: FastifyInstance, lifecycle: { readonly closing: boolean }): void {
  app.addHook("onRequest", async (request) => {
    if (lifecycle.closing && !PROBE_URLS.has(request.routeOptions.url ?? "")) {
      throw new ApiError("Unavailable", "the service is shutting down; retry against the next instance");
    }
  });
}

export interface RouteDependencies {
  readonly clusters: ReadonlyMap<string, ClusterService>;
  readonly metrics: ServiceMetrics;
  readonly readiness: () => Readiness;
  readonly tokens: TokenVerifier;
  /** Projected ServiceAccount tokens, when accepted. */
  readonly serviceAccounts?: ServiceAccountTokens;
  readonly rateLimitPerMinute: number | false;
  readonly unauthenticatedPerMinute: number;
  /** The create route's fault knob (BuildServerOptions.dropCreateAnswers). */
  readonly dropCreateAnswer?: () => boolean;
}

/** Every route and HTTP concern; shared by buildServer and the OpenAPI generator. */
export async function registerRoutes(app: FastifyInstance, deps: RouteDependencies): Promise<void> {
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  registerErrorHandling(app);
  strictJsonBodies(app);
  await app.register(swagger, {
    openapi: openApiDocumentation(),
    transform: openApiTransform,
    transformObject: openApiComponents,
  });
  await app.register(fastifyMetrics, {
    endpoint: null,
    defaultMetrics: { enabled: false },
    routeMetrics: {
      // A histogram only: a summary computes quantiles in the service on every request (and cannot be aggregated).
      enabled: { histogram: true, summary: false },
      registeredRoutesOnly: true,
      overrides: {
        histogram: { name: "nodefleet_http_request_duration_seconds", registers: [deps.metrics.registry] },
        // fastify-metrics 13 creates the summary even when disabled (node_modules/fastify-metrics/dist/
        // fastify-metrics.js registerRouteMetrics); no registers keeps it out of every registry, so
        // /metrics never serves a family that is never observed.
        summary: { name: "nodefleet_http_request_summary_seconds", registers: [] },
      },
    },
  });
  app.get("/metrics", { schema: { hide: true }, logLevel: "warn" }, async (_request, reply) =>
    reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics()),
  );
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  await app.register(probeRoutes, { readiness: deps.readiness });
  await app.register(
    async (api) => {
      const perToken = deps.rateLimitPerMinute;
      const keyOf = rateLimitKey(deps.tokens, deps.serviceAccounts);
      await api.register(rateLimit, {
        // Not per route: route hooks run after the authentication hook, so failed authentications would never count.
        global: false,
        max: (_request, key) =>
          key.startsWith(UNAUTHENTICATED_KEY_PREFIX)
            ? deps.unauthenticatedPerMinute
            : perToken === false
              ? Number.MAX_SAFE_INTEGER
              : perToken,
        timeWindow: 60_000,
        keyGenerator: keyOf,
        errorResponseBuilder: (request, context) => ({
          statusCode: 429,
          code: "RateLimited",
          message: keyOf(request).startsWith(UNAUTHENTICATED_KEY_PREFIX)
            ? `more than ${context.max} requests per minute without a valid token from this address; retry in ${Math.ceil(context.ttl / 1000)} s`
            : `rate limit of ${context.max} requests per minute exceeded; retry in ${Math.ceil(context.ttl / 1000)} s`,
        }),
      });
      api.addHook("onRequest", api.rateLimit());
      await api.register(authPlugin, {
        tokens: deps.tokens,
        servedClusters: new Set(deps.clusters.keys()),
        ...(deps.serviceAccounts ? { serviceAccounts: deps.serviceAccounts } : {}),
      });
      await api.register(clusterRoutes, { clusters: deps.clusters });
      await api.register(nodeRoutes, {
        clusters: deps.clusters,
        ...(deps.dropCreateAnswer ? { dropCreateAnswer: deps.dropCreateAnswer } : {}),
      });
    },
    { prefix: API_PREFIX },
  );
}
