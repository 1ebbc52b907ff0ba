/**
 * One stack's scaling API, started but not yet listening: its configuration checked first, then
 * its data directory, store, engine, tokens and server, with the orphan reclaimer and the healer
 * beside it. `serve` listens with it alone, or hands it requests through the front of a service
 * with several clusters (serveCommand.ts, clusterHosts.ts).
 */
import { setTimeout as delay } from "node:timers/promises";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import {
  API_TOKENS_KEY,
  declaredConfigTokens,
  loadApiTokens,
  plainTokenErrors,
  readRawStackConfig,
  type ReadSecretConfig,
} from "../api/apiTokenSources";
import { hashToken, parseApiTokens, type TokenEntry } from "../api/apiTokens";
import { buildServer } from "../api/server";
import type { RunScheduler } from "../reconciler/runScheduler";
import { TemporalRuns } from "../temporal/temporalRuns";
import { temporalSettingsFromEnv } from "../temporal/temporalSettings";
import { NODEFLEET_AUDIENCE, parseServiceAccount } from "../api/serviceAccountTokens";
import { readTlsFiles, tlsFilesFromEnv } from "../api/tlsFiles";
import { autoscaledPools, type FleetSpec } from "../../components/fleet/fleetSpec";
import { ServiceMetrics } from "../api/serviceMetrics";
import { withDecryptedSecrets } from "../api/decryptedStackConfig";
import { StackConfigSource } from "../api/stackConfigSource";
import { CatalogSource } from "../catalog/catalogSource";
import { PoolImageSource } from "../catalog/poolImageSource";
import { lookUpSharedResources } from "../reconciler/sharedResources";
import { GitStackPrerequisites } from "../reconciler/gitStackPrerequisites";
import { OfferingAvailability } from "../catalog/offeringAvailability";
import { AutomationEngine, DEFAULT_ENGINE_PARALLEL } from "../engine/automationEngine";
import { apiStackPlugins, pluginLabel, pluginSource } from "../engine/providerPlugins";
import { HcloudClient } from "../hcloud/hcloudClient";
import type { StackEngine } from "../engine/stackEngine";
import { gitStackProgram } from "../gitStackProgram";
import { FirstApply } from "./firstApply";
import { assertCanListen } from "./portCheck";
import { OrphanReclaimer, hcloudInventory, simulatedInventory } from "../reconciler/orphanReclaimer";
import { serviceElasticMetalReclaimer } from "../reconciler/elasticMetalOrphans";
import { SIMULATION_BANNER, SimulatedEngine } from "../simulated/simulatedEngine";
import { projectRoot } from "../stackConfigFile";
import { acquireDataDirLock } from "../store/dataDirLock";
import { databasePath, openDatabase, type Db } from "../store/database";
import { databaseLabel, databaseUrlFromEnv } from "../store/databaseUrl";
import { openPostgresStores, type SharedStores } from "../store/postgresStores";
import { fileBackendDir } from "../engine/fileBackendState";
import { assertStoreNotLost } from "../store/storeIntegrity";
import { assertSharedClaimsNotLostInCloud, assertStoreNotLostInCloud } from "../reconciler/storeLostInCloud";
import { apiEngineStateOf, apiStackDefinition } from "../reconciler/apiStack";
import { DEFAULT_CREATE_DEADLINE_MS } from "../reconciler/runOutcome";
import { membersPerShard } from "../reconciler/apiShard";
import { DEFAULT_CONCURRENT_SHARD_RUNS } from "../reconciler/clusterShards";
import { errorMessage } from "../../components/shared/errorMessage";
import { healSettings, serviceHealer } from "../heal/serviceHealer";
import { clusterNodeList, serviceKubeconfig } from "../api/clusterNodeList";

/** How long a failed start or a shutdown waits for the API stack workspace's preparation (a CLI process or two). */
const PREPARE_WAIT_MS = 10_000;

export interface StackServiceOptions {
  /** The stack whose stacks/Pulumi.<stack>.yaml declares the cluster. */
  readonly stack: string;
  /** Default: simulated without cloud credentials in the environment, automation with them. */
  readonly engine?: "automation" | "simulated";
  /** Its own directory: store, lock, engine state (one service per directory). */
  readonly dataDir: string;
  /**
   * Where it will listen alone, checked before anything starts. Absent behind the front of a
   * service with several clusters (clusterFront.ts), which listens, terminates TLS and keeps the
   * process metrics instead.
   */
  readonly listen?: { readonly host: string; readonly port: number };
  /** The process's Temporal workers and client in the scale-out mode (openRunScheduler); default: runs in process. */
  readonly runScheduler?: RunScheduler;
}

const CLOUD_CREDENTIALS = ["HCLOUD_TOKEN", "SCW_SECRET_KEY"] as const;

function intEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer (got ${JSON.stringify(raw)})`);
  return value;
}

export function positiveIntEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = intEnv(env, name, fallback);
  if (value === 0) throw new Error(`${name} must be a positive integer (got "0")`);
  return value;
}

/** The file `nodefleet nodes` reads a generated development token from. */
export function generatedTokenPath(dataDir: string): string {
  return path.join(dataDir, "api-token");
}

/**
 * Tokens from NODEFLEET_API_TOKENS and the stack's secret `nodefleet:apiTokens` (decrypted through
 * the Automation API when `readSecretConfig` is given), combined; without any, a random token for
 * the served cluster is generated once and kept 0600 in the data directory. Only counts and the
 * token file's path are logged, never a token.
 */
async function apiTokens(
  options: {
    stackName: string;
    clusterId: string;
    rawConfig: Record<string, unknown>;
    dataDir: string;
    readSecretConfig?: ReadSecretConfig;
  },
  env: NodeJS.ProcessEnv,
  logger: Logger,
): Promise<TokenEntry[]> {
  const sources = await loadApiTokens(
    { stackName: options.stackName, clusterId: options.clusterId, rawConfig: options.rawConfig, envTokens: env.NODEFLEET_API_TOKENS },
    options.readSecretConfig,
  );
  if (sources.errors.length > 0) throw new Error(`API tokens: ${sources.errors.join("; ")}`);
  for (const notice of sources.notices) process.stderr.write(`nodefleet serve: ${notice}\n`);
  if (!sources.needsGeneratedToken) {
    logger.info({ fromEnv: sources.counts.env, fromStackConfig: sources.counts.stackConfig }, "API tokens loaded");
    return sources.entries;
  }
  const file = generatedTokenPath(options.dataDir);
  if (!fs.existsSync(file)) fs.writeFileSync(file, `${randomBytes(24).toString("base64url")}\n`, { mode: 0o600, flag: "wx" });
  logger.warn(
    { tokenFile: file },
    `neither NODEFLEET_API_TOKENS nor ${API_TOKENS_KEY} yields a token: using a generated token for this cluster, stored in the data directory`,
  );
  return [{ clusterId: options.clusterId, hash: hashToken(fs.readFileSync(file, "utf8").trim()) }];
}

/** git's static pools: their servers belong to git's stack, never to the API's. */
function staticPoolNames(fleet: FleetSpec): Set<string> {
  return new Set(fleet.pools.filter((pool) => pool.mode === "static").map((pool) => pool.name));
}

/** What the stack file and the environment decide, checked before anything touches the data directory. */
export interface ServeConfiguration {
  readonly root: string;
  readonly stack: StackConfigSource;
  readonly fleet: FleetSpec;
  readonly rawConfig: Record<string, unknown>;
  readonly kind: "automation" | "simulated";
  readonly settings: ServiceSettings;
  /** The simulated engine's home outside the data directory (simulatedCloudHome). */
  readonly simulatedHome?: string;
}

type ServiceSettings = ReturnType<typeof serviceSettings>;

/** The service's tuning from NODEFLEET_* variables: read (and refused when malformed) before anything starts. */
function serviceSettings(env: NodeJS.ProcessEnv) {
  return {
    unavailableForMs: intEnv(env, "NODEFLEET_UNAVAILABLE_FOR_MS", 30 * 60_000),
    backoffForMs: intEnv(env, "NODEFLEET_BACKOFF_FOR_MS", 5 * 60_000),
    orphanGraceMs: intEnv(env, "NODEFLEET_ORPHAN_GRACE_MS", 30 * 60_000),
    orphanIntervalMs: intEnv(env, "NODEFLEET_ORPHAN_INTERVAL_MS", 5 * 60_000),
    batch: { idleMs: intEnv(env, "NODEFLEET_BATCH_IDLE_MS", 1000), maxMs: intEnv(env, "NODEFLEET_BATCH_MAX_MS", 10_000) },
    retry: { initialMs: intEnv(env, "NODEFLEET_RETRY_INITIAL_MS", 2000), maxMs: intEnv(env, "NODEFLEET_RETRY_MAX_MS", 60_000) },
    createDeadlineMs: positiveIntEnv(env, "NODEFLEET_CREATE_DEADLINE_MS", DEFAULT_CREATE_DEADLINE_MS),
    rateLimitPerMinute: intEnv(env, "NODEFLEET_RATE_LIMIT_PER_MINUTE", 6000) || false,
    shutdownGraceMs: intEnv(env, "NODEFLEET_SHUTDOWN_GRACE_MS", 30_000),
    engineParallel: positiveIntEnv(env, "NODEFLEET_ENGINE_PARALLEL", DEFAULT_ENGINE_PARALLEL),
    membersPerShard: membersPerShard(env.NODEFLEET_SHARD_SIZE),
    concurrentShardRuns: positiveIntEnv(env, "NODEFLEET_SHARD_RUNS", DEFAULT_CONCURRENT_SHARD_RUNS),
    prerequisiteRecheckMs: positiveIntEnv(env, "NODEFLEET_PREREQUISITE_RECHECK_MS", 5_000),
    dropCreateAnswers: intEnv(env, "NODEFLEET_SIM_DROP_CREATE_ANSWERS", 0),
    serviceAccount: env.NODEFLEET_SERVICE_ACCOUNT ? parseServiceAccount(env.NODEFLEET_SERVICE_ACCOUNT) : undefined,
    tls: tlsFilesFromEnv(env),
    plugins: pluginSource(env),
    heal: healSettings(env, (name, fallback) => intEnv(env, name, fallback)),
    databaseUrl: databaseUrlFromEnv(env),
  } as const;
}

/** Every configuration error first, so a start that would fail leaves no data directory behind. */
async function checkedConfiguration(options: StackServiceOptions, env: NodeJS.ProcessEnv, logger: Logger): Promise<ServeConfiguration> {
  const root = projectRoot();
  const stack = new StackConfigSource(options.stack, root, logger);
  const fleet = stack.fleet();
  // Plain tokens in the committed stack file are refused before any engine starts.
  const rawConfig = readRawStackConfig(stack.path);
  const refused = plainTokenErrors(declaredConfigTokens(rawConfig), options.stack);
  if (refused.length > 0) throw new Error(`API tokens: ${refused.join("; ")}`);
  parseApiTokens(env.NODEFLEET_API_TOKENS);
  const kind = options.engine ?? (CLOUD_CREDENTIALS.some((name) => env[name]) ? "automation" : "simulated");
  const settings = serviceSettings(env);
  const simulatedHome = kind === "simulated" ? simulatedCloudHome(env) : undefined;
  // An unreadable or mismatched certificate stops the start here, naming the file.
  if (settings.tls && options.listen) readTlsFiles(settings.tls);
  // The port too: a start that cannot listen must not leave a data directory behind.
  if (options.listen) await assertCanListen(options.listen.host, options.listen.port);
  return { root, stack, fleet, rawConfig, kind, settings, ...(simulatedHome ? { simulatedHome } : {}) };
}

/**
 * Where the simulated engine keeps its cloud and its stacks' state when not in the data directory:
 * the directory of a `file://` NODEFLEET_API_STACK_BACKEND_URL, so replicas on one machine share
 * them as they would share a real cloud and an object store. Refused for other backends.
 */
function simulatedCloudHome(env: NodeJS.ProcessEnv): string | undefined {
  const url = env.NODEFLEET_API_STACK_BACKEND_URL;
  if (!url) return undefined;
  const dir = fileBackendDir(url);
  if (!dir)
    throw new Error("NODEFLEET_API_STACK_BACKEND_URL: the simulated engine keeps its state in a directory: a file:// URL, or unset");
  return dir;
}

/**
 * The shared database's counterpart of assertStoreKept: one with no claim of the cluster while
 * Hetzner holds servers the API created is refused before anything runs (the orphan reclaimer would
 * delete them). Only the cloud can tell: the data directory holds no claims in this mode.
 */
async function assertSharedClaimsKept(
  shared: SharedStores,
  database: string,
  config: ServeConfiguration,
  hcloud: HcloudClient | undefined,
): Promise<void> {
  const { fleet } = config;
  const inventory = apiServerInventory(config, hcloud);
  if (inventory) await assertSharedClaimsNotLostInCloud(shared.claims, database, inventory, fleet.cluster.id, staticPoolNames(fleet));
}

/**
 * Hetzner's listing of the cluster's servers when it can show servers the API created (the
 * automation engine with a token, a fleet with an autoscaled pool); undefined otherwise.
 */
function apiServerInventory(config: ServeConfiguration, hcloud: HcloudClient | undefined): ReturnType<typeof hcloudInventory> | undefined {
  return config.kind === "automation" && hcloud && autoscaledPools(config.fleet).length > 0 ? hcloudInventory(hcloud) : undefined;
}

/** A lost store is refused before it is opened, so the service never starts empty over servers it created. */
async function assertStoreKept(dataDir: string, config: ServeConfiguration, hcloud: HcloudClient | undefined): Promise<void> {
  const { fleet } = config;
  // The claims are in the shared database (assertSharedClaimsKept): the data directory's store holds none to lose.
  if (config.settings.databaseUrl) return;
  // The directory's evidence first (definite, and needs no network); then the real cloud, which
  // outlives the directory and may keep the engine state elsewhere: a store missing over servers
  // the API created (what the orphan reclaimer would delete) is lost, whatever the directory shows.
  assertStoreNotLost(databasePath(dataDir), () => apiEngineStateOf(dataDir, fleet.cluster.id));
  const inventory = apiServerInventory(config, hcloud);
  if (inventory) await assertStoreNotLostInCloud(databasePath(dataDir), inventory, fleet.cluster.id, staticPoolNames(fleet));
}

type ReclaimerOptions = Omit<ConstructorParameters<typeof OrphanReclaimer>[0], "inventory">;

/** The orphan reclaimer's settings, the same whichever engine supplies its inventory. */
function reclaimerOptions(config: ServeConfiguration, env: NodeJS.ProcessEnv, metrics: ServiceMetrics, logger: Logger): ReclaimerOptions {
  return {
    clusterId: config.fleet.cluster.id,
    graceMs: config.settings.orphanGraceMs,
    intervalMs: config.settings.orphanIntervalMs,
    dryRun: env.NODEFLEET_ORPHAN_DRY_RUN === "1" || env.NODEFLEET_ORPHAN_DRY_RUN === "true",
    metrics,
    logger,
  };
}

/** What the chosen engine brings to the service: the engine and what only it can provide. */
interface EngineWiring {
  readonly engine: StackEngine;
  /** The API stack program's config: the stack file's, with the secrets decrypted when the engine can. */
  readonly programConfig: () => ReturnType<StackConfigSource["stackConfig"]>;
  readonly readSecretConfig?: ReadSecretConfig;
  readonly firstApply?: FirstApply;
  readonly reclaimer?: OrphanReclaimer;
  /** The API stack's workspace being prepared at start. */
  readonly preparing?: Promise<void>;
  /** Settles once the engine can run (see BuildServerOptions.engineReady), and what readyz says meanwhile. */
  readonly engineReady?: { readonly ready: Promise<unknown>; readonly starting: string };
}

/** What both engines need to build their parts. */
interface EngineContext {
  readonly options: StackServiceOptions;
  readonly config: ServeConfiguration;
  readonly dataDir: string;
  readonly hcloud: HcloudClient | undefined;
  readonly metrics: ServiceMetrics;
  readonly reclaimerOptions: ReclaimerOptions;
  readonly logger: Logger;
  /** The cluster's environment (its own credentials: clusterCredentials.ts): the engine runs in it. */
  readonly env: NodeJS.ProcessEnv;
}

/** Without cloud credentials (or asked for): the simulated cloud, announced loudly, with the git stack applied first. */
function wireSimulatedEngine({ options, config, dataDir, metrics, reclaimerOptions, logger }: EngineContext): EngineWiring {
  const { stack, settings } = config;
  if (!options.engine)
    process.stderr.write("nodefleet serve: no cloud credentials (HCLOUD_TOKEN) found, so the SIMULATED engine is used.\n");
  process.stderr.write(`\n*** ${SIMULATION_BANNER} ***\n\n`);
  const simulated = new SimulatedEngine({ dataDir: config.simulatedHome ?? dataDir, banner: false, logger });
  const secured = stack.encryptedPaths;
  if (secured.length > 0)
    logger.warn({ paths: secured }, "encrypted config values cannot be read offline; the simulation runs without them");
  // The git stack first, so the API stack's network and firewall look-ups resolve as against a real cloud.
  // Started once the service listens, retried until it goes through (firstApply.ts).
  const firstApply = new FirstApply(
    () =>
      simulated.up({ stackName: options.stack, program: gitStackProgram({ allowMissingKubeconfig: true }), config: stack.stackConfig() }),
    settings.retry,
    logger,
  );
  const reclaimer = new OrphanReclaimer({ ...reclaimerOptions, inventory: simulatedInventory(simulated.cloud, metrics) });
  return {
    engine: simulated,
    programConfig: () => stack.stackConfig(),
    firstApply,
    reclaimer,
    engineReady: { ready: firstApply.ready, starting: "applying the git stack before the first run" },
  };
}

/** With cloud credentials: the Automation API engine, which can decrypt the stack's secrets. */
async function wireAutomationEngine({
  options,
  config,
  dataDir,
  hcloud,
  reclaimerOptions,
  logger,
  env,
}: EngineContext): Promise<EngineWiring> {
  const { root, stack, fleet, settings } = config;
  const automation = await AutomationEngine.create({
    dataDir,
    logger,
    env,
    parallel: settings.engineParallel,
    ...(hcloud ? { hcloud } : {}),
  });
  const gitStack = { stackName: options.stack, program: gitStackProgram({ allowMissingKubeconfig: false }), config: {}, projectDir: root };
  const readSecretConfig: ReadSecretConfig = async (key) => (await automation.readStackConfig(gitStack))[key];
  let programConfig = () => stack.stackConfig();
  if (stack.encryptedPaths.length > 0) {
    // The API stack's program needs the git stack's secure values (the kubeconfig): decrypted once
    // here and again whenever the stack file is re-read.
    let decrypted = await automation.readStackConfig(gitStack);
    stack.onReread = () => {
      automation.readStackConfig(gitStack).then(
        (config) => (decrypted = config),
        (error: unknown) =>
          logger.error({ err: errorMessage(error) }, "decrypting the changed stack config failed; keeping the last secrets"),
      );
    };
    programConfig = () => withDecryptedSecrets(stack.stackConfig(), decrypted);
  }
  const reclaimer = hcloud ? new OrphanReclaimer({ ...reclaimerOptions, inventory: hcloudInventory(hcloud) }) : undefined;
  // The API stack's workspace at start, not on the first create's path; a fleet without an
  // autoscaled pool never runs that stack, and gets none.
  const runsApiStack = autoscaledPools(fleet).length > 0;
  const preparing = runsApiStack
    ? automation.prepare(apiStackDefinition({ clusterId: fleet.cluster.id, members: [], config: programConfig() }))
    : undefined;
  return {
    engine: automation,
    programConfig,
    readSecretConfig,
    ...(reclaimer ? { reclaimer } : {}),
    ...(preparing ? { preparing } : {}),
    ...(runsApiStack
      ? { engineReady: { ready: apiStackPluginsResolved(automation, logger), starting: "installing provider plugins" } }
      : {}),
  };
}

/** The API stack's provider plugins, resolved before its first run and logged with where each comes from (docs/engines.md). */
function apiStackPluginsResolved(automation: AutomationEngine, logger: Logger): Promise<void> {
  const resolved = automation.resolvePlugins(apiStackPlugins()).then(
    (resolved) =>
      logger.info(
        { plugins: resolved.map((r) => ({ name: r.plugin.name, version: r.plugin.version, from: r.from, path: r.path })) },
        `provider plugins for the API stack: ${resolved.map((r) => `${pluginLabel(r.plugin)} (${r.from})`).join(", ")}`,
      ),
    (error: unknown) => {
      logger.error({ err: errorMessage(error) }, "provider plugins missing: no engine run starts");
      throw error;
    },
  );
  // Settled before readiness watches it (the tokens are read in between): not an unhandled rejection.
  resolved.catch(() => undefined);
  return resolved;
}

/** A started service: the server and what runs next to it until it closes. */
export interface StartedService {
  readonly app: FastifyInstance;
  readonly database: Db;
  readonly firstApply?: FirstApply;
  readonly reclaimer?: OrphanReclaimer;
  /** The stack's config as the programs get it (secrets decrypted). */
  readonly programConfig: EngineWiring["programConfig"];
  /** Waits for the API stack's workspace preparation, at most PREPARE_WAIT_MS. */
  readonly preparedOrGaveUp: () => Promise<unknown>;
}

/** The store, the engine, the tokens and the server, in that order; a failed start leaves nothing held. */
async function startService(
  options: StackServiceOptions,
  env: NodeJS.ProcessEnv,
  config: ServeConfiguration,
  dataDir: string,
  lock: ReturnType<typeof acquireDataDirLock>,
  logger: Logger,
): Promise<StartedService> {
  const { fleet, kind, settings } = config;
  let database: Db | undefined;
  let shared: SharedStores | undefined;
  // The API stack's workspace prepared at start; a failed start or a shutdown waits for it (bounded).
  let preparing: Promise<void> | undefined;
  const preparedOrGaveUp = () => Promise.race([preparing, delay(PREPARE_WAIT_MS, undefined, { ref: false })]);
  try {
    // Behind a front the process metrics are the front's, once (clusterFront.ts).
    const metrics = new ServiceMetrics({ defaultMetrics: options.listen !== undefined });
    // One counted client for the lost-store check, the engine's crash-recovery look-ups, the orphan reclaimer and the catalog.
    const hcloud = HcloudClient.fromEnv(env, (method, urlPath) =>
      metrics.cloudRequest("hcloud", `${method} ${urlPath.split("?")[0]!.replace(/\/\d+/g, "/{id}")}`),
    );
    await assertStoreKept(dataDir, config, hcloud);
    database = openDatabase(dataDir);
    shared = settings.databaseUrl ? await openSharedDatabase(settings.databaseUrl, settings.concurrentShardRuns, logger) : undefined;
    if (shared && settings.databaseUrl) await assertSharedClaimsKept(shared, databaseLabel(settings.databaseUrl), config, hcloud);
    const availability = new OfferingAvailability(settings.unavailableForMs, Date.now, settings.backoffForMs);
    const context = {
      options,
      config,
      dataDir,
      hcloud,
      metrics,
      reclaimerOptions: reclaimerOptions(config, env, metrics, logger),
      logger,
      env,
    };
    const wiring = kind === "simulated" ? wireSimulatedEngine(context) : await wireAutomationEngine(context);
    preparing = wiring.preparing;
    const catalog = new CatalogSource({
      availability,
      logger,
      ...(hcloud ? { client: hcloud } : {}),
    });
    // Autoscaled pools' imageSelector, resolved through the same counted client.
    const images = new PoolImageSource(
      hcloud ? { newestImage: (selector, architecture) => hcloud.newestImage(selector, architecture) } : {},
    );
    // The tokens (the stack's secret ones need the engine to decrypt) before the engine applies anything.
    const { readSecretConfig } = wiring;
    const tokens = await apiTokens(
      {
        stackName: options.stack,
        clusterId: fleet.cluster.id,
        rawConfig: config.rawConfig,
        dataDir,
        ...(readSecretConfig ? { readSecretConfig } : {}),
      },
      env,
      logger,
    );
    if (settings.serviceAccount)
      logger.info(
        { serviceAccount: `${settings.serviceAccount.namespace}/${settings.serviceAccount.name}`, audience: NODEFLEET_AUDIENCE },
        "projected ServiceAccount tokens of this ServiceAccount are accepted after a TokenReview against the cluster's API server",
      );
    if (settings.dropCreateAnswers > 0)
      logger.warn(
        { NODEFLEET_SIM_DROP_CREATE_ANSWERS: settings.dropCreateAnswers },
        "fault injection: the answers of the first creates are dropped after they are committed",
      );
    const app = await buildServer({
      dataDir,
      lock,
      database,
      ...(shared ? { shared } : {}),
      ...(options.runScheduler ? { runScheduler: options.runScheduler } : {}),
      engine: wiring.engine,
      fleet: () => config.stack.fleet(),
      stackConfig: () => wiring.programConfig(),
      tokens,
      ...(settings.serviceAccount ? { serviceAccountTokens: { serviceAccount: settings.serviceAccount } } : {}),
      ...(settings.tls && options.listen ? { tls: settings.tls } : {}),
      batch: settings.batch,
      retry: settings.retry,
      createDeadlineMs: settings.createDeadlineMs,
      membersPerShard: settings.membersPerShard,
      concurrentShardRuns: settings.concurrentShardRuns,
      ...(wiring.engineReady ? { engineReady: wiring.engineReady.ready, engineStarting: wiring.engineReady.starting } : {}),
      ...(kind !== "simulated" && hcloud && autoscaledPools(fleet).length > 0
        ? { prerequisites: gitStackPrerequisites(options, config, hcloud, logger) }
        : {}),
      catalog,
      images,
      availability,
      metrics,
      logger,
      rateLimitPerMinute: settings.rateLimitPerMinute,
      shutdownGraceMs: settings.shutdownGraceMs,
      ...(settings.dropCreateAnswers > 0 ? { dropCreateAnswers: settings.dropCreateAnswers } : {}),
    });
    return {
      app,
      database,
      ...(wiring.firstApply ? { firstApply: wiring.firstApply } : {}),
      ...(wiring.reclaimer ? { reclaimer: wiring.reclaimer } : {}),
      programConfig: wiring.programConfig,
      preparedOrGaveUp,
    };
  } catch (error) {
    // A failed start leaves nothing held: the store closed, the lock file removed.
    await preparedOrGaveUp();
    if (database?.open) database.close();
    await shared?.close();
    lock.release();
    throw error;
  }
}

/**
 * The scale-out mode's Temporal part when NODEFLEET_TEMPORAL_ADDRESS is set (temporalSettings.ts):
 * one client and worker per process, for every cluster it serves, its workflows batching and
 * retrying with the service's NODEFLEET_BATCH_* and NODEFLEET_RETRY_* settings.
 */
export async function openRunScheduler(env: NodeJS.ProcessEnv, logger: Logger): Promise<TemporalRuns | undefined> {
  const temporal = temporalSettingsFromEnv(env);
  if (!temporal) return undefined;
  const settings = serviceSettings(env);
  return TemporalRuns.open({
    settings: temporal,
    runs: { batch: settings.batch, retry: settings.retry },
    shutdownGraceMs: settings.shutdownGraceMs,
    logger,
  });
}

/**
 * The scale-out mode's shared database (NODEFLEET_DATABASE_URL), its schema up to date; named by
 * host and database only. Each shard's run holds a connection for its lock (postgresRunStore.ts
 * `exclusively`): the pool has that many beyond the requests' own ten.
 */
async function openSharedDatabase(url: string, concurrentShardRuns: number, logger: Logger): Promise<SharedStores> {
  const label = databaseLabel(url);
  try {
    const shared = await openPostgresStores({ connectionString: url, maxConnections: 10 + concurrentShardRuns });
    logger.info({ database: label }, "claims, engine runs, operations and guard fingerprints are in the shared PostgreSQL database");
    return shared;
  } catch (error) {
    throw new Error(`NODEFLEET_DATABASE_URL: could not open the database ${label}: ${errorMessage(error)}`);
  }
}

/** With the Hetzner client, the git stack's network and firewall are looked up by the service and their absence refused. */
function gitStackPrerequisites(
  options: StackServiceOptions,
  config: ServeConfiguration,
  hcloud: HcloudClient,
  logger: Logger,
): GitStackPrerequisites {
  return new GitStackPrerequisites(
    () => lookUpSharedResources(hcloud, config.stack.fleet()),
    `\`pulumi up --stack ${options.stack}\` in ${config.root}`,
    logger,
    config.settings.prerequisiteRecheckMs,
  );
}

/** The reclaimer deletes servers nobody claims: it runs while the server does, told the store's claims and git's static pools. */
function reclaimOrphansWhileServing(service: StartedService, config: ServeConfiguration): void {
  const { app, reclaimer: r } = service;
  if (!r) return;
  // Through the repository: in scale-out mode the claims are in the shared database, not the data directory's store.
  r.knownNodes = async () =>
    new Set(
      (
        await app.nodefleet.claims.list(config.fleet.cluster.id, {
          statuses: ["PENDING", "PROVISIONING", "RUNNING", "FAILED", "TERMINATING"],
        })
      ).map((c) => c.nodeId),
    );
  r.staticPools = () => staticPoolNames(config.stack.fleet());
  app.addHook("onReady", async () => r.start());
  app.addHook("onClose", async () => r.stop());
}

/** Elastic Metal orphans are reclaimed while the server runs, with Scaleway's secret key (reconciler/elasticMetalOrphans.ts). */
function reclaimElasticMetalWhileServing(service: StackService, env: NodeJS.ProcessEnv, logger: Logger): void {
  const { app, config, programConfig } = service;
  const reclaimer = serviceElasticMetalReclaimer({
    env,
    fleet: () => config.stack.fleet(),
    listNodes: () => clusterNodeList(programConfig(), config.fleet.cluster.id),
    options: reclaimerOptions(config, env, app.nodefleet.metrics, logger),
    metrics: app.nodefleet.metrics,
  });
  if (!reclaimer) return;
  app.addHook("onReady", async () => reclaimer.start());
  app.addHook("onClose", async () => reclaimer.stop());
}

/** Bare-metal healing runs while the server does, for the stack's Robot and Elastic Metal pools (heal/serviceHealer.ts). */
function healWhileServing(service: StartedService, config: ServeConfiguration, env: NodeJS.ProcessEnv, logger: Logger): void {
  const { app, programConfig } = service;
  const healer = serviceHealer({
    settings: config.settings.heal,
    fleet: () => config.stack.fleet(),
    kubeconfig: () => serviceKubeconfig(programConfig()),
    listNodes: () => clusterNodeList(programConfig(), config.fleet.cluster.id),
    env,
    metrics: app.nodefleet.metrics,
    logger,
  });
  if (!healer) return;
  app.addHook("onReady", async () => healer.start());
  app.addHook("onClose", async () => healer.stop());
}

/** A stack's service as `serve` runs it: started, with its configuration and directory. */
export interface StackService extends StartedService {
  readonly config: ServeConfiguration;
  readonly dataDir: string;
}

/** Configuration, data directory, store and engine, server, reclaimer and healer, in that order; not yet listening. */
export async function startStackService(options: StackServiceOptions, env: NodeJS.ProcessEnv, logger: Logger): Promise<StackService> {
  const dataDir = path.resolve(options.dataDir);
  const config = await checkedConfiguration(options, env, logger);
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  // Before anything touches the directory's state; the store next (its checks and SQLite's OS-level
  // lock), so a second instance or a lost store stops the start before an engine runs.
  const lock = acquireDataDirLock(dataDir);
  const service = await startService(options, env, config, dataDir, lock, logger);
  reclaimOrphansWhileServing(service, config);
  const started = { ...service, config, dataDir };
  if (config.kind !== "simulated") {
    healWhileServing(service, config, env, logger);
    reclaimElasticMetalWhileServing(started, env, logger);
  }
  // A shutdown waits for the API stack's workspace preparation too (bounded).
  service.app.addHook("onClose", async () => {
    await service.preparedOrGaveUp();
  });
  return started;
}
