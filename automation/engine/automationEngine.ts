/**
 * The Automation API StackEngine (what users run against real clouds): an inline program in a
 * LocalWorkspace whose workDir persists under the data directory (Pulumi.<stack>.yaml and its
 * encryption salt survive restarts), the file backend `file://<dataDir>/state` for its own stacks
 * unless NODEFLEET_API_STACK_BACKEND_URL says otherwise (PULUMI_BACKEND_URL is the git stack's),
 * passphrase secrets, continueOnError, per-resource steps from engine events, AbortSignal
 * cancellation, crash recovery before every run and the plugins of dead CLIs stopped after it.
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import {
  type ConfigMap,
  ConcurrentUpdateError,
  type EngineEvent,
  LocalWorkspace,
  type OpType,
  type PulumiCommand,
  type Stack,
  type StepEventMetadata,
} from "@pulumi/pulumi/automation";
import { loadProgram, runProgramReference } from "../gitStackProgram";
import { killProcesses, processTrees, pulumiProcessesFor } from "./cliProcesses";
import { type MarkedProcess, OWNER_MARK, leftoversOfEndedEngines, orphansOf, ownerMark, stopProcesses } from "./leftoverProcesses";
import { type RecoveryOptions, type RecoveryReport, recoverStack } from "./crashRecovery";
import type { StackFence } from "./objectStoreLocks";
import {
  fileBackendDir,
  fileBackendUrl,
  isNodefleetFileBackend,
  pruneStackHistory,
  removeTornSidecars,
  stackCheckpointPath,
} from "./fileBackendState";
import { HcloudClient } from "../hcloud/hcloudClient";
import { ElasticMetalApi, scalewayAccessFromEnv } from "../scaleway/elasticMetalApi";
import { resolvePassphrase } from "./passphrase";
import { reportStep, runResult } from "./progressFormat";
import { requirePulumiCommand } from "./pulumiCli";
import { StackQueue } from "./stackQueue";
import { moveStackStateHome } from "./stackStateMove";
import { pulumiProcessEnv } from "./toolchain";
import { type ProviderPlugin, pluginSource } from "./providerPlugins";
import { type ResolvedPlugin, installProviderPlugins } from "./pluginInstall";
import {
  type EngineLogger,
  type ResourceStep,
  RunCancelledError,
  RunFailedError,
  type RefreshOptions,
  type RunOptions,
  type RunResult,
  type StackDefinition,
  type StackEngine,
  type StepOp,
  type StoredResource,
  type StoredState,
} from "./stackEngine";
import { errorMessage } from "../../components/shared/errorMessage";

export interface AutomationEngineOptions {
  /** Data directory: workspaces, the default file backend, the generated passphrase, run markers. */
  readonly dataDir: string;
  /** Pulumi project name. Default `nodefleet`. */
  readonly project?: string;
  /** Default `process.env` (NODEFLEET_API_STACK_BACKEND_URL, PULUMI_BACKEND_URL, PULUMI_CONFIG_PASSPHRASE[_FILE], HCLOUD_TOKEN). */
  readonly env?: NodeJS.ProcessEnv;
  readonly logger?: EngineLogger;
  /** For crash-recovery look-ups; default from HCLOUD_TOKEN. */
  readonly hcloud?: HcloudClient;
  /** For crash-recovery look-ups of Elastic Metal servers; default from SCW_SECRET_KEY (scalewayAccessFromEnv). */
  readonly scaleway?: ElasticMetalApi;
  /** What crash recovery does with a server found for a pending create. Default `import`. */
  readonly pendingCreateStrategy?: "import" | "delete";
  /** A run still going after this long is cancelled (SIGINT) and recorded as abandoned. Default 30 min. */
  readonly runDeadlineMs?: number;
  /** After a cancellation, the CLI gets this long to stop gracefully before it is killed. Default 60 s. */
  readonly forceStopAfterMs?: number;
  /** A resolved CLI; default: the toolchain rule (PATH first, else the toolchain cache), checked by `create`. */
  readonly pulumiCommand?: PulumiCommand;
  /** Updates of history kept per API stack on nodefleet's own file backend (older ones are removed). Default 20. */
  readonly historyToKeep?: number;
  /** Resource operations the CLI runs at once (`--parallel`). Default DEFAULT_ENGINE_PARALLEL (why: there). */
  readonly parallel?: number;
  /**
   * Serve's shared mode: the lock the calling run of one of the engine's own stacks (an API stack,
   * never a git stack) holds, that every replica's run of that stack takes first (the shard's
   * PostgreSQL run lock); undefined when it holds none. While held, crash recovery removes another
   * machine's lock on the stack in an object-storage backend (after FENCE_MARGIN_MS beyond the
   * force-stop time); once lost, the run is cancelled.
   */
  readonly runFence?: (stackName: string) => RunFence | undefined;
}

/** A lock across replicas held by a run (AutomationEngineOptions.runFence). */
export interface RunFence {
  /** Aborts when the lock is lost during the run. */
  readonly lost: AbortSignal;
  /** Whether the lock's store confirms it is held now. */
  confirm(): Promise<boolean>;
}

/**
 * Beyond the force-stop time, how long a fenced run gives another machine's stack lock to go by
 * itself: a replica that lost its run lock cancels its CLI at once and kills it after its force-stop
 * time (the same for every replica), so a lock still there after both is a dead run's.
 */
const FENCE_MARGIN_MS = 10_000;

/** Engine ops collapsed onto the contract's five (replacement halves count once, as `replace`). */
const OP_MAP: Partial<Record<OpType, StepOp>> = {
  same: "same",
  read: "same",
  refresh: "same",
  create: "create",
  import: "create",
  update: "update",
  replace: "replace",
  "import-replacement": "replace",
  "read-replacement": "replace",
  delete: "delete",
  discard: "delete",
};

function nameFromUrn(urn: string): string {
  return urn.slice(urn.lastIndexOf("::") + 2);
}

/** Root stack and provider resources are engine plumbing, not fleet resources. */
function isPlumbing(type: string): boolean {
  return type === "pulumi:pulumi:Stack" || type.startsWith("pulumi:providers:");
}

/**
 * The input keys a step changes, as the provider reported them (`diffs`, else its detailed diff);
 * providers that report only "changed" (dynamic providers) get the keys whose inputs differ, as the
 * CLI's own diff display computes them.
 */
function changedKeys(metadata: StepEventMetadata): string[] {
  if (metadata.diffs?.length) return [...metadata.diffs].sort();
  const detailed = Object.keys(metadata.detailedDiff ?? {}).map((path) => path.split(/[.[]/)[0]);
  if (detailed.length) return [...new Set(detailed)].sort();
  const olds = metadata.old?.inputs ?? {};
  const news = metadata.new?.inputs ?? {};
  if (!metadata.old || !metadata.new || metadata.op === "same") return [];
  return [...new Set([...Object.keys(olds), ...Object.keys(news)])]
    .filter((k) => JSON.stringify(olds[k]) !== JSON.stringify(news[k]))
    .sort();
}

/**
 * The halves of a replacement: their success is the `replace` step's, but a failure of either is
 * the replacement's failure and must reach the caller (the member's claim).
 */
const REPLACEMENT_HALVES: ReadonlySet<OpType> = new Set<OpType>(["create-replacement", "delete-replaced", "discard-replaced"]);

export function stepFromMetadata(metadata: StepEventMetadata, error?: string): ResourceStep | undefined {
  let op = OP_MAP[metadata.op] ?? (error && REPLACEMENT_HALVES.has(metadata.op) ? "replace" : undefined);
  if (!op || isPlumbing(metadata.type)) return undefined;
  if (metadata.op === "refresh" && (metadata.diffs?.length ?? 0) > 0) op = "update";
  if (metadata.op === "refresh" && metadata.new === undefined && metadata.old !== undefined) op = "delete";
  return {
    op,
    urn: metadata.urn,
    type: metadata.type,
    name: nameFromUrn(metadata.urn),
    keys: changedKeys(metadata),
    ...(op === "replace" ? { replaceKeys: [...(metadata.keys ?? [])].sort() } : {}),
    ...(error ? { error } : {}),
  };
}

/** Collects steps from engine events: pre-events for previews, completed/failed ones for updates. */
class StepCollector {
  readonly steps: ResourceStep[] = [];
  /** The root stack's outputs, from its outputs event (undefined until it arrives). */
  stackOutputs?: Record<string, unknown>;
  /** Every completed engine step, in order (updates only). */
  readonly engineSteps: Array<{ op: string; urn: string }> = [];
  private readonly diagnostics = new Map<string, string>();

  constructor(
    private readonly usePreEvents: boolean,
    private readonly report: (step: ResourceStep, count: number) => void,
  ) {}

  onEvent = (event: EngineEvent): void => {
    const diag = event.diagnosticEvent;
    if (diag?.urn && diag.severity === "error") {
      this.diagnostics.set(diag.urn, `${this.diagnostics.get(diag.urn) ?? ""}${diag.message}`.trim());
    }
    const completed = event.resOutputsEvent?.metadata;
    if (completed && !this.usePreEvents) this.engineSteps.push({ op: completed.op, urn: completed.urn });
    if (completed?.type === "pulumi:pulumi:Stack" && completed.new) this.stackOutputs = completed.new.outputs ?? {};
    const metadata = this.usePreEvents ? event.resourcePreEvent?.metadata : completed;
    if (metadata) this.add(stepFromMetadata(metadata));
    const failed = event.resOpFailedEvent?.metadata;
    if (failed) this.add(stepFromMetadata(failed, this.diagnostics.get(failed.urn) ?? `${failed.op} failed`));
  };

  private add(step: ResourceStep | undefined): void {
    if (!step) return;
    this.steps.push(step);
    this.report(step, this.steps.length);
  }

  /** Errors reported after the failure event are attached at the end. */
  finalSteps(): ResourceStep[] {
    return this.steps.map((s) => (s.error && this.diagnostics.has(s.urn) ? { ...s, error: this.diagnostics.get(s.urn)! } : s));
  }
}

/** Config values as the stack settings file holds them (objects as JSON), secret ones or plain ones. */
function configStrings(config: StackDefinition["config"], secret: boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, entry] of Object.entries(config)) {
    if ((entry.secret ?? false) !== secret) continue;
    out[key] = typeof entry.value === "string" ? entry.value : JSON.stringify(entry.value);
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * Provider packages the programs use. Their settings are read by the engine from the stack's own
 * config, never from the program's config store, so a secret one set there would silently not reach
 * the provider; their credentials come from the environment instead (HCLOUD_TOKEN, SCW_SECRET_KEY).
 */
const PROVIDER_NAMESPACES = ["hcloud", "kubernetes", "random", "time", "command", "scaleway"];

/** Refuses secret config for a provider namespace, naming the key and the environment variable route. */
function assertNoProviderSecrets(config: StackDefinition["config"]): void {
  for (const [key, entry] of Object.entries(config)) {
    const namespace = key.split(":")[0]!;
    if (entry.secret && PROVIDER_NAMESPACES.includes(namespace)) {
      throw new Error(
        `config ${key}: a provider's secret setting cannot be passed as a secret value through the automation engine (it would not reach the provider); set it in the environment of \`nodefleet serve\` instead (e.g. HCLOUD_TOKEN)`,
      );
    }
  }
}

/** The signature key of a secret value as engine events show it ({<sig>: ..., ciphertext: "[secret]"}). */
const SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d";

interface OperationContext {
  readonly stack: Stack;
  readonly onEvent: (event: EngineEvent) => void;
  readonly signal: AbortSignal;
  readonly program: () => Promise<Record<string, unknown>>;
}

const DEFAULT_RUN_DEADLINE_MS = 30 * 60_000;
const DEFAULT_HISTORY_TO_KEEP = 20;
const DEFAULT_FORCE_STOP_MS = 60_000;
/**
 * The CLI's default is four per core (8 on two cores): a server's create step lasts until Hetzner's
 * action finishes, so a burst of 40 members was created in waves of eight (bench/README.md has the
 * figures, from bench/localCloudCreate.bench.ts). Enough for a full 100-node pool at once.
 */
export const DEFAULT_ENGINE_PARALLEL = 128;
const LOCKED_RETRIES = 5;

function lockedRetryDelayMs(attempt: number): number {
  return Math.min(30_000, 1000 * 2 ** (attempt - 1));
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function firstLines(message: string): string {
  return message.split("\n").slice(0, 20).join("\n");
}

/** Removes every secret config value (and its lines, for multi-line values) from a text kept in errors and the operation log. */
function redactSecrets(text: string, def: StackDefinition): string {
  let out = text;
  for (const value of Object.values(configStrings(def.config, true))) {
    for (const fragment of [value, ...value.split("\n").filter((line) => line.trim().length >= 8)]) {
      if (fragment.length >= 4) out = out.split(fragment).join("[secret]");
    }
  }
  return out;
}

/**
 * One run's stop: the caller's AbortSignal or the run deadline cancels gracefully (the Automation
 * API sends SIGINT, and the CLI finishes the operations in flight); a CLI still running
 * `forceAfterMs` later is killed, leaving its lock and pending operations to the next run's recovery.
 */
class RunStopper {
  private readonly controller = new AbortController();
  private readonly timers: NodeJS.Timeout[] = [];
  private why = "was cancelled";
  private readonly onCallerAbort = () => this.abort("was cancelled");
  private readonly disposers: Array<() => void> = [];

  constructor(
    private readonly stackName: string,
    private readonly callerSignal: AbortSignal | undefined,
    deadlineMs: number,
    private readonly forceAfterMs: number,
  ) {
    callerSignal?.addEventListener("abort", this.onCallerAbort, { once: true });
    this.timers.push(setTimeout(() => this.abort(`was abandoned after its ${Math.round(deadlineMs / 1000)} s deadline`), deadlineMs));
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  reason(): string {
    return this.why;
  }

  private abort(why: string): void {
    if (this.controller.signal.aborted) return;
    this.why = why;
    this.controller.abort();
    this.timers.push(
      setTimeout(() => {
        // The CLI's plugins (providers, the dynamic-provider host) with it: killed alone, it would leave them running for good.
        const clis = pulumiProcessesFor(this.stackName);
        const killed = killProcesses(processTrees(clis));
        if (killed.some((pid) => clis.includes(pid)))
          this.why = `${why}; the pulumi CLI did not stop within ${Math.round(this.forceAfterMs / 1000)} s and was killed (the next run recovers its lock and pending operations)`;
      }, this.forceAfterMs),
    );
  }

  /** Also stops the run, for `why`, when `signal` aborts. */
  stopOn(signal: AbortSignal, why: string): void {
    const onAbort = () => this.abort(why);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    this.disposers.push(() => signal.removeEventListener("abort", onAbort));
  }

  dispose(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.callerSignal?.removeEventListener("abort", this.onCallerAbort);
    for (const dispose of this.disposers) dispose();
  }
}

export class AutomationEngine implements StackEngine {
  readonly kind = "automation" as const;
  private readonly queue = new StackQueue();
  private readonly env: NodeJS.ProcessEnv;
  private readonly project: string;
  /** The backend of the engine's own (data-directory) stacks. */
  private readonly backendUrl: string;
  /** Where those stacks' state lived before it moved to the data directory (see stackStateMove.ts). */
  private readonly formerBackendUrl?: string;
  /** In the environment of every pulumi process the engine starts (see leftoverProcesses.ts). */
  private readonly mark: string;
  private readonly hcloud?: HcloudClient;
  private readonly scaleway?: ElasticMetalApi;
  private readonly processEnv: Record<string, string>;
  private command?: Promise<PulumiCommand>;
  private readonly stacks = new Map<string, Promise<Stack>>();
  private readonly parallel: number;

  /** Checks that the pulumi CLI is available (throws PulumiCliMissingError with the install hint). */
  static async create(options: AutomationEngineOptions): Promise<AutomationEngine> {
    const command = options.pulumiCommand ?? (await requirePulumiCommand(options.env ?? process.env));
    const engine = new AutomationEngine({ ...options, pulumiCommand: command });
    await engine.stopLeftovers();
    return engine;
  }

  constructor(private readonly options: AutomationEngineOptions) {
    this.env = options.env ?? process.env;
    this.parallel = options.parallel ?? DEFAULT_ENGINE_PARALLEL;
    if (!Number.isInteger(this.parallel) || this.parallel < 1)
      throw new RangeError(`parallel must be a positive whole number, got ${this.parallel}`);
    if (options.pulumiCommand) this.command = Promise.resolve(options.pulumiCommand);
    // The engine's environment is its runs' environment: provider credentials (HCLOUD_TOKEN,
    // HCLOUD_ENDPOINT) given in options.env reach the CLI and its plugins, not only process.env's.
    const given = Object.entries(options.env ?? {}).filter((entry): entry is [string, string] => entry[1] !== undefined);
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    this.mark = ownerMark(options.dataDir);
    this.processEnv = { ...Object.fromEntries(given), ...pulumiProcessEnv(options.dataDir, this.env), [OWNER_MARK]: this.mark };
    this.project = options.project ?? "nodefleet";
    // Next to the store it must agree with, whatever backend the git stack uses: a backup or a move
    // of the data directory then carries both, and the lost-store check at start sees the state.
    const stateDir = join(options.dataDir, "state");
    const explicit = this.env.NODEFLEET_API_STACK_BACKEND_URL;
    if (!explicit) mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    this.backendUrl = explicit || fileBackendUrl(stateDir);
    const shared = this.env.PULUMI_BACKEND_URL;
    if (!explicit && shared && shared !== this.backendUrl) this.formerBackendUrl = shared;
    this.hcloud = options.hcloud ?? HcloudClient.fromEnv(this.env);
    const scaleway = scalewayAccessFromEnv(this.env);
    this.scaleway = options.scaleway ?? (scaleway ? new ElasticMetalApi(scaleway) : undefined);
  }

  /** Runs queued or in progress on a stack (all stacks when omitted). */
  queueDepth(stack?: string): number {
    return this.queue.depth(stack);
  }

  /** Before the stack is selected: removes the metadata sidecars a killed pulumi process left torn on its file backend. */
  private repairFileBackend(def: StackDefinition): void {
    const stackName = def.stackName;
    const backendDir = fileBackendDir(this.backendOf(def));
    if (!backendDir) return;
    for (const path of removeTornSidecars(backendDir)) {
      this.options.logger?.warn(
        { event: "crash_recovery", stack: stackName, file: path },
        "removed a metadata sidecar torn by a killed pulumi process",
      );
    }
  }

  /** A git stack's backend is the user's (PULUMI_BACKEND_URL, as for its CLI runs); the engine's own stacks have theirs. */
  private backendOf(def: StackDefinition): string {
    return def.projectDir ? this.env.PULUMI_BACKEND_URL || this.backendUrl : this.backendUrl;
  }

  /**
   * At start: the pulumi processes earlier engines on this data directory left running (a service
   * SIGKILLed with its CLI leaves the plugins, which run in process groups of their own). An
   * orphaned CLI still holding the stack's lock goes too; the next run's recovery takes the lock over.
   */
  async stopLeftovers(): Promise<MarkedProcess[]> {
    const stopped = await stopProcesses(leftoversOfEndedEngines(this.options.dataDir));
    if (stopped.length > 0)
      this.options.logger?.warn(
        { event: "leftover_processes", pids: stopped.map((p) => p.pid) },
        `stopped ${stopped.length} pulumi process(es) an earlier run of this data directory left running`,
      );
    return stopped;
  }

  /** After a run: this engine's processes whose CLI died (killed, or crashed) and left them running. */
  private async stopOrphans(stackName: string): Promise<void> {
    const stopped = await stopProcesses(orphansOf(this.mark));
    if (stopped.length > 0)
      this.options.logger?.warn(
        { event: "leftover_processes", stack: stackName, pids: stopped.map((p) => p.pid) },
        `stopped ${stopped.length} pulumi plugin process(es) a dead pulumi CLI left running`,
      );
  }

  /** The API's stacks on nodefleet's own file backend keep a bounded history (see pruneStackHistory). */
  private pruneHistory(stackName: string): void {
    const backendDir = fileBackendDir(this.backendUrl);
    if (!backendDir || !isNodefleetFileBackend(this.backendUrl)) return;
    const removed = pruneStackHistory(backendDir, this.project, stackName, this.options.historyToKeep ?? DEFAULT_HISTORY_TO_KEEP);
    if (removed > 0) this.options.logger?.debug?.({ stack: stackName, removed }, "pruned the stack's update history");
  }

  /**
   * One Stack object per stack for the engine's lifetime: selecting a stack costs a CLI process
   * (each paying the passphrase KDF), so it happens once; each run passes its own program.
   */
  private async workspaceStack(def: StackDefinition): Promise<Stack> {
    const key = `${def.projectDir ?? ""}\0${def.stackName}`;
    let stack = this.stacks.get(key);
    if (!stack) {
      stack = def.projectDir ? this.projectStack(def, def.projectDir) : this.dataDirStack(def);
      this.stacks.set(key, stack);
      stack.catch(() => this.stacks.delete(key));
    }
    const selected = await stack;
    if (!def.projectDir) await this.writeStackConfig(selected, def);
    return selected;
  }

  /** Plain config goes to the stack settings file directly (no CLI process), only when it changed. */
  private async writeStackConfig(stack: Stack, def: StackDefinition): Promise<void> {
    // A stack its backend already holds, selected from a new data directory (a service moved with a
    // backend of its own), has no settings file yet: the workspace refuses to read one.
    const fileName = `Pulumi.${def.stackName.split("/").pop()}`; // the workspace's own naming: the stack's last segment
    const hasSettings = [".yaml", ".yml", ".json"].some((ext) => existsSync(join(stack.workspace.workDir, `${fileName}${ext}`)));
    const settings = hasSettings ? await stack.workspace.stackSettings(def.stackName) : {};
    const config = configStrings(def.config, false);
    if (JSON.stringify(settings.config ?? {}) !== JSON.stringify(config)) {
      await stack.workspace.saveStackSettings(def.stackName, { ...settings, config });
    }
  }

  /**
   * The provider plugins `plugins` made loadable for this engine's runs, as NODEFLEET_PLUGINS says:
   * upstream's installed into its Pulumi home (from NODEFLEET_PLUGIN_DIR, else downloaded), or the
   * toolchain's found on PATH. Throws naming each one that cannot be had.
   */
  async resolvePlugins(plugins: readonly ProviderPlugin[]): Promise<ResolvedPlugin[]> {
    const command = await this.pulumiCommand();
    const pluginDir = this.env.NODEFLEET_PLUGIN_DIR;
    return installProviderPlugins({
      source: pluginSource(this.env),
      plugins,
      pulumi: command.command,
      processEnv: this.processEnv,
      ...(pluginDir ? { pluginDir } : {}),
    });
  }

  private pulumiCommand(): Promise<PulumiCommand> {
    this.command ??= requirePulumiCommand(this.env);
    return this.command;
  }

  /**
   * The inline program. Secret config values never pass through the CLI (its argv is readable by
   * every local user): they are set in the program's own config store, marked secret, so every
   * resource input derived from them is a secret in the state.
   */
  private inlineProgram(def: StackDefinition): () => Promise<Record<string, unknown>> {
    assertNoProviderSecrets(def.config);
    const secrets = configStrings(def.config, true);
    return async () => {
      if (Object.keys(secrets).length > 0) pulumi.runtime.setAllConfig({ ...pulumi.runtime.allConfig(), ...secrets }, Object.keys(secrets));
      return (await runProgramReference(def.program)) as Record<string, unknown>;
    };
  }

  /** The API's own stacks: settings, salt, state and passphrase all live under the data directory. */
  private async dataDirStack(def: StackDefinition): Promise<Stack> {
    const workDir = join(this.options.dataDir, "workspaces", def.stackName);
    mkdirSync(workDir, { recursive: true, mode: 0o700 });
    const passphrase = resolvePassphrase(this.options.dataDir, this.env);
    if (this.formerBackendUrl) {
      const envVars = {
        ...this.processEnv,
        ...passphrase.envVars,
        ...(this.env.PULUMI_ACCESS_TOKEN ? { PULUMI_ACCESS_TOKEN: this.env.PULUMI_ACCESS_TOKEN } : {}),
      };
      await moveStackStateHome({
        stackName: def.stackName,
        project: this.project,
        workDir,
        from: this.formerBackendUrl,
        to: this.backendUrl,
        envVars,
        pulumiCommand: await this.pulumiCommand(),
        logger: this.options.logger,
      });
    }
    const stack = await LocalWorkspace.createOrSelectStack(
      { stackName: def.stackName, projectName: this.project, program: this.inlineProgram(def) },
      {
        workDir,
        pulumiCommand: await this.pulumiCommand(),
        envVars: {
          ...this.processEnv,
          PULUMI_BACKEND_URL: this.backendUrl,
          // Each update already keeps a copy of the state in the history (pruned after each run).
          ...(isNodefleetFileBackend(this.backendUrl) ? { PULUMI_DIY_BACKEND_DISABLE_CHECKPOINT_BACKUPS: "true" } : {}),
          ...passphrase.envVars,
        },
        projectSettings: { name: this.project, runtime: "nodejs", backend: { url: this.backendUrl } },
      },
    );
    return stack;
  }

  /**
   * Git-owned stacks: the project's Pulumi.yaml and committed stack file are used as they are (their
   * secure values decrypt with the stack's own secrets provider; the backend is the user's), and
   * nothing is written to them.
   */
  private async projectStack(def: StackDefinition, projectDir: string): Promise<Stack> {
    const envVars: Record<string, string> = { ...this.processEnv };
    for (const key of ["PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE", "PULUMI_ACCESS_TOKEN"]) {
      const value = this.env[key];
      if (value) envVars[key] = value;
    }
    return LocalWorkspace.createOrSelectStack(
      { stackName: def.stackName, projectName: this.project, program: this.inlineProgram(def) },
      { workDir: projectDir, pulumiCommand: await this.pulumiCommand(), envVars },
    );
  }

  private async run(
    kind: RunResult["kind"],
    def: StackDefinition,
    options: RunOptions,
    operation: (run: OperationContext) => Promise<void>,
  ): Promise<RunResult> {
    return this.queue.run(def.stackName, async () => {
      if (options.signal?.aborted) throw new RunCancelledError();
      const started = Date.now();
      // Before the CLI selects the stack: a torn sidecar fails every command, selection included.
      this.repairFileBackend(def);
      const stack = await this.workspaceStack(def);
      const stop = new RunStopper(
        def.stackName,
        options.signal,
        this.options.runDeadlineMs ?? DEFAULT_RUN_DEADLINE_MS,
        this.options.forceStopAfterMs ?? DEFAULT_FORCE_STOP_MS,
      );
      // In the caller's context: the run lock it holds, if any (a git stack's run is never fenced).
      const fence = def.projectDir ? undefined : this.options.runFence?.(def.stackName);
      if (fence) stop.stopOn(fence.lost, "lost its run lock (the database connection holding it ended): another replica may run the stack");
      try {
        for (let attempt = 1; ; attempt++) {
          await recoverStack(stack, { ...this.recoveryOptions(def), ...(fence ? { fence: this.stackFence(fence) } : {}) });
          const collector = new StepCollector(kind === "preview", (step, count) =>
            reportStep(step, count, options, this.options.logger, false),
          );
          try {
            await operation({ stack, onEvent: collector.onEvent, signal: stop.signal, program: this.inlineProgram(def) });
          } catch (error) {
            if (stop.signal.aborted) throw new RunCancelledError(`${kind} of stack ${def.stackName} ${stop.reason()}`);
            if (error instanceof ConcurrentUpdateError && attempt < LOCKED_RETRIES) {
              // Another live pulumi process holds the stack (a person's `pulumi up`, say): wait for it.
              this.options.logger?.warn(
                { event: "stack_locked", stack: def.stackName, attempt },
                `stack ${def.stackName} is locked by another pulumi process; retrying`,
              );
              await delay(lockedRetryDelayMs(attempt));
              continue;
            }
            const steps = collector.finalSteps();
            // continueOnError: the CLI exits non-zero when some resources failed; that is a result, not a crash.
            if (!steps.some((s) => s.error))
              throw new RunFailedError(
                `${kind} of stack ${def.stackName} failed: ${redactSecrets(firstLines((error as Error).message), def)}`,
                steps,
              );
          }
          const steps = collector.finalSteps().map((step) => (step.error ? { ...step, error: redactSecrets(step.error, def) } : step));
          // The root stack's outputs arrive as an engine event; secret ones are masked there, and
          // only then are they read back (two more CLI processes).
          const outputs = collector.stackOutputs;
          const complete = outputs !== undefined && !JSON.stringify(outputs).includes(SECRET_SIGNATURE);
          const result = runResult(kind, steps, complete ? outputs : kind === "preview" ? {} : await this.outputsOf(stack), started, false);
          if (kind !== "preview" && !def.projectDir) this.pruneHistory(def.stackName);
          return kind === "preview" ? result : { ...result, engineSteps: collector.engineSteps };
        }
      } finally {
        stop.dispose();
        await this.stopOrphans(def.stackName);
      }
    });
  }

  /** What crash recovery of a stack is told: its backend, the clouds' clients, the strategy. */
  private recoveryOptions(def: StackDefinition): RecoveryOptions {
    return {
      stackName: def.stackName,
      project: this.project,
      backendUrl: this.backendOf(def),
      ...(this.hcloud ? { hcloud: this.hcloud } : {}),
      ...(this.scaleway ? { scaleway: this.scaleway } : {}),
      ...(this.env.SCW_DEFAULT_ZONE ? { scalewayZone: this.env.SCW_DEFAULT_ZONE } : {}),
      ...(this.options.pendingCreateStrategy ? { strategy: this.options.pendingCreateStrategy } : {}),
      ...(this.options.logger ? { logger: this.options.logger } : {}),
      env: this.env,
    };
  }

  /** Crash recovery's view of a run's fence: confirmed before another machine's lock is removed, after the grace. */
  private stackFence(fence: RunFence): StackFence {
    return { held: () => fence.confirm(), graceMs: (this.options.forceStopAfterMs ?? DEFAULT_FORCE_STOP_MS) + FENCE_MARGIN_MS };
  }

  /**
   * Crash recovery alone, as before every run (`nodefleet recover`): for a git stack a person runs
   * with `pulumi up`, whose killed CLI left a stale lock and pending creates.
   */
  async recover(def: StackDefinition): Promise<RecoveryReport> {
    return this.queue.run(def.stackName, async () => {
      this.repairFileBackend(def);
      return recoverStack(await this.workspaceStack(def), this.recoveryOptions(def));
    });
  }

  private async outputsOf(stack: Stack): Promise<Record<string, unknown>> {
    const map = await stack.outputs();
    return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, v.value]));
  }

  /**
   * Selects (or creates) a stack's workspace and writes its settings ahead of its first run (the
   * service does so at start for its API stack): the CLI processes that takes are then not on the
   * first create's path, nor are the program's modules loaded by it. A failure is logged and left
   * to that run, which tries again.
   */
  async prepare(def: StackDefinition): Promise<void> {
    try {
      // The program's modules as well: its SDKs load slowly the first time.
      loadProgram(def.program);
      await this.queue.run(def.stackName, async () => {
        // As before a run: a torn sidecar fails every command, selection included.
        this.repairFileBackend(def);
        await this.workspaceStack(def);
      });
    } catch (error) {
      const message = redactSecrets(firstLines(errorMessage(error)), def);
      this.options.logger?.warn(
        { stack: def.stackName, err: message },
        "preparing the stack's workspace failed; its first run tries again",
      );
    }
  }

  up(def: StackDefinition, options: RunOptions = {}): Promise<RunResult> {
    return this.run("up", def, options, async ({ stack, onEvent, signal, program }) => {
      // The Automation API follows every up with `stack output` (twice) and `stack history`; the
      // outputs come from the engine's events instead (see run), so those reads are skipped.
      const skipped = stack as unknown as { outputs: () => Promise<unknown>; info: () => Promise<unknown> };
      const { outputs, info } = skipped;
      skipped.outputs = async () => ({});
      skipped.info = async () => undefined;
      try {
        await stack.up({ continueOnError: true, onEvent, signal, program, parallel: this.parallel });
      } finally {
        skipped.outputs = outputs;
        skipped.info = info;
      }
    });
  }

  preview(def: StackDefinition, options: RunOptions = {}): Promise<RunResult> {
    return this.run("preview", def, options, async ({ stack, onEvent, signal, program }) => {
      await stack.preview({ onEvent, signal, program, parallel: this.parallel });
    });
  }

  refresh(def: StackDefinition, options: RefreshOptions = {}): Promise<RunResult> {
    return this.run("refresh", def, options, async ({ stack, onEvent, signal }) => {
      const target = options.targets ? { target: [...options.targets] } : {};
      await stack.refresh({ onEvent, signal, parallel: this.parallel, ...target });
    });
  }

  /**
   * The API stack's state as stored: on a file backend the checkpoint file itself (read, no CLI
   * process; its bytes change with every write, the manifest's time among them), elsewhere `pulumi
   * stack export`. Git-owned stacks are not the service's to fingerprint: undefined.
   */
  async storedState(def: StackDefinition): Promise<StoredState | undefined> {
    if (def.projectDir) return undefined;
    return this.queue.run(def.stackName, async () => {
      const backendDir = fileBackendDir(this.backendUrl);
      const file = backendDir ? stackCheckpointPath(backendDir, this.project, def.stackName) : undefined;
      if (file && existsSync(file)) {
        const raw = readFileSync(file);
        let resources: StoredResource[] | undefined;
        return {
          digest: createHash("sha256").update(raw).digest("hex"),
          // Parsed only for a run that deletes without a preview: the state grows with the fleet.
          get resources(): StoredResource[] {
            resources ??=
              (JSON.parse(raw.toString("utf8")) as { checkpoint?: { latest?: { resources?: StoredResource[] } } }).checkpoint?.latest
                ?.resources ?? [];
            return resources;
          },
        };
      }
      // Another backend, or a compressed checkpoint: what the CLI exports.
      const deployment = (await (await this.workspaceStack(def)).exportStack()).deployment as { resources?: StoredResource[] } | undefined;
      const text = JSON.stringify(deployment ?? null);
      return { digest: createHash("sha256").update(text).digest("hex"), resources: deployment?.resources ?? [] };
    });
  }

  async outputs(def: StackDefinition): Promise<Record<string, unknown>> {
    return this.queue.run(def.stackName, async () => this.outputsOf(await this.workspaceStack(def)));
  }

  /**
   * A git stack's config as `pulumi config` reads it, secure values decrypted with the stack's own
   * secrets provider (the scaling API's tokens live there); nothing is written to the stack file.
   */
  readStackConfig(def: StackDefinition & { readonly projectDir: string }): Promise<ConfigMap> {
    return this.queue.run(def.stackName, async () => (await this.projectStack(def, def.projectDir)).getAllConfig());
  }
}
