/**
 * The Automation API StackEngine (what users run against real clouds): an inline program in a
 * LocalWorkspace whose workDir persists under the data directory (Pulumi.<stack>.yaml and its
 * encryption salt survive restarts), the file backend `file://<dataDir>/state` unless
 * PULUMI_BACKEND_URL says otherwise, passphrase secrets, continueOnError, per-resource steps from
 * engine events, AbortSignal cancellation and crash recovery before every run.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  type ConfigMap,
  type EngineEvent,
  LocalWorkspace,
  type OpType,
  type PulumiCommand,
  type Stack,
  type StepEventMetadata,
} from "@pulumi/pulumi/automation";
import { runProgramReference } from "../gitStackProgram";
import { clearRunMarker, recoverStack, writeRunMarker } from "./crashRecovery";
import { HcloudClient } from "./hcloudClient";
import { resolvePassphrase } from "./passphrase";
import { reportStep, runResult } from "./progressFormat";
import { PulumiCliMissingError, findPulumiOnPath, requirePulumiCommand } from "./pulumiCli";
import { StackQueue } from "./stackQueue";
import {
  type EngineLogger,
  type ResourceStep,
  RunCancelledError,
  RunFailedError,
  type RunOptions,
  type RunResult,
  type StackDefinition,
  type StackEngine,
  type StepOp,
} from "./stackEngine";

export interface AutomationEngineOptions {
  /** Data directory: workspaces, the default file backend, the generated passphrase, run markers. */
  readonly dataDir: string;
  /** Pulumi project name. Default `nodefleet`. */
  readonly project?: string;
  /** Default `process.env` (PULUMI_BACKEND_URL, PULUMI_CONFIG_PASSPHRASE[_FILE], HCLOUD_TOKEN). */
  readonly env?: NodeJS.ProcessEnv;
  readonly logger?: EngineLogger;
  /** For crash-recovery look-ups; default from HCLOUD_TOKEN. */
  readonly hcloud?: HcloudClient;
  /** What crash recovery does with a server found for a pending create. Default `import`. */
  readonly pendingCreateStrategy?: "import" | "delete";
  /** A resolved CLI; default: `pulumi` on PATH (checked by `create`). */
  readonly pulumiCommand?: PulumiCommand;
}

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

export function stepFromMetadata(metadata: StepEventMetadata, error?: string): ResourceStep | undefined {
  let op = OP_MAP[metadata.op];
  if (!op || isPlumbing(metadata.type)) return undefined;
  if (metadata.op === "refresh" && (metadata.diffs?.length ?? 0) > 0) op = "update";
  if (metadata.op === "refresh" && metadata.new === undefined && metadata.old !== undefined) op = "delete";
  return {
    op,
    urn: metadata.urn,
    type: metadata.type,
    name: nameFromUrn(metadata.urn),
    keys: [...(metadata.diffs ?? [])].sort(),
    ...(op === "replace" ? { replaceKeys: [...(metadata.keys ?? [])].sort() } : {}),
    ...(error ? { error } : {}),
  };
}

/** Collects steps from engine events: pre-events for previews, completed/failed ones for updates. */
class StepCollector {
  readonly steps: ResourceStep[] = [];
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
    const metadata = this.usePreEvents ? event.resourcePreEvent?.metadata : event.resOutputsEvent?.metadata;
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

export class AutomationEngine implements StackEngine {
  readonly kind = "automation" as const;
  private readonly queue = new StackQueue();
  private readonly env: NodeJS.ProcessEnv;
  private readonly project: string;
  private readonly backendUrl: string;
  private readonly hcloud?: HcloudClient;

  /** Checks that the pulumi CLI is available (throws PulumiCliMissingError with the install hint). */
  static async create(options: AutomationEngineOptions): Promise<AutomationEngine> {
    const command = options.pulumiCommand ?? (await requirePulumiCommand(options.env ?? process.env));
    return new AutomationEngine({ ...options, pulumiCommand: command });
  }

  constructor(private readonly options: AutomationEngineOptions) {
    this.env = options.env ?? process.env;
    // Fail at construction, with the fix, rather than at the first run.
    if (!options.pulumiCommand && !findPulumiOnPath(this.env)) throw new PulumiCliMissingError("not on PATH");
    this.project = options.project ?? "nodefleet";
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    const stateDir = join(options.dataDir, "state");
    if (!this.env.PULUMI_BACKEND_URL) mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    this.backendUrl = this.env.PULUMI_BACKEND_URL || `file://${stateDir}`;
    this.hcloud = options.hcloud ?? HcloudClient.fromEnv(this.env);
  }

  /** Runs queued or in progress on a stack (all stacks when omitted). */
  queueDepth(stack?: string): number {
    return this.queue.depth(stack);
  }

  private async workspaceStack(def: StackDefinition): Promise<Stack> {
    return def.projectDir ? this.projectStack(def, def.projectDir) : this.dataDirStack(def);
  }

  private inlineProgram(def: StackDefinition): () => Promise<Record<string, unknown>> {
    return async () => (await runProgramReference(def.program)) as Record<string, unknown>;
  }

  /** The API's own stacks: settings, salt, state and passphrase all live under the data directory. */
  private async dataDirStack(def: StackDefinition): Promise<Stack> {
    const workDir = join(this.options.dataDir, "workspaces", def.stackName);
    mkdirSync(workDir, { recursive: true, mode: 0o700 });
    const passphrase = resolvePassphrase(this.options.dataDir, this.env);
    const stack = await LocalWorkspace.createOrSelectStack(
      { stackName: def.stackName, projectName: this.project, program: this.inlineProgram(def) },
      {
        workDir,
        pulumiCommand: this.options.pulumiCommand,
        envVars: { PULUMI_BACKEND_URL: this.backendUrl, ...passphrase.envVars },
        projectSettings: { name: this.project, runtime: "nodejs", backend: { url: this.backendUrl } },
      },
    );
    const config: ConfigMap = {};
    for (const [key, entry] of Object.entries(def.config)) {
      config[key] = { value: typeof entry.value === "string" ? entry.value : JSON.stringify(entry.value), secret: entry.secret ?? false };
    }
    await stack.setAllConfig(config);
    return stack;
  }

  /**
   * Git-owned stacks: the project's Pulumi.yaml and committed stack file are used as they are (their
   * secure values decrypt with the stack's own secrets provider; the backend is the user's), and
   * nothing is written to them.
   */
  private async projectStack(def: StackDefinition, projectDir: string): Promise<Stack> {
    const envVars: Record<string, string> = {};
    for (const key of ["PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE", "PULUMI_ACCESS_TOKEN"]) {
      const value = this.env[key];
      if (value) envVars[key] = value;
    }
    return LocalWorkspace.createOrSelectStack(
      { stackName: def.stackName, projectName: this.project, program: this.inlineProgram(def) },
      { workDir: projectDir, pulumiCommand: this.options.pulumiCommand, envVars },
    );
  }

  private async run(
    kind: RunResult["kind"],
    def: StackDefinition,
    options: RunOptions,
    operation: (stack: Stack, onEvent: (e: EngineEvent) => void) => Promise<unknown>,
  ): Promise<RunResult> {
    return this.queue.run(def.stackName, async () => {
      if (options.signal?.aborted) throw new RunCancelledError();
      const started = Date.now();
      const stack = await this.workspaceStack(def);
      await recoverStack(stack, {
        dataDir: this.options.dataDir,
        stackName: def.stackName,
        hcloud: this.hcloud,
        strategy: this.options.pendingCreateStrategy,
        logger: this.options.logger,
      });
      const collector = new StepCollector(kind === "preview", (step, count) => reportStep(step, count, options, this.options.logger, false));
      writeRunMarker(this.options.dataDir, def.stackName, kind);
      try {
        await operation(stack, collector.onEvent);
      } catch (error) {
        if (options.signal?.aborted) throw new RunCancelledError(`${kind} of stack ${def.stackName} was cancelled`);
        const steps = collector.finalSteps();
        // continueOnError: the CLI exits non-zero when some resources failed; that is a result, not a crash.
        if (!steps.some((s) => s.error)) throw new RunFailedError(`${kind} of stack ${def.stackName} failed: ${(error as Error).message}`, steps);
      } finally {
        clearRunMarker(this.options.dataDir, def.stackName);
      }
      const steps = collector.finalSteps();
      const outputs = await this.outputsOf(stack);
      return runResult(kind, steps, outputs, started, false);
    });
  }

  private async outputsOf(stack: Stack): Promise<Record<string, unknown>> {
    const map = await stack.outputs();
    return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, v.value]));
  }

  up(def: StackDefinition, options: RunOptions = {}): Promise<RunResult> {
    return this.run("up", def, options, (stack, onEvent) => stack.up({ continueOnError: true, onEvent, signal: options.signal }));
  }

  preview(def: StackDefinition, options: RunOptions = {}): Promise<RunResult> {
    return this.run("preview", def, options, (stack, onEvent) => stack.preview({ onEvent, signal: options.signal }));
  }

  refresh(def: StackDefinition, options: RunOptions = {}): Promise<RunResult> {
    return this.run("refresh", def, options, (stack, onEvent) => stack.refresh({ onEvent, signal: options.signal }));
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
