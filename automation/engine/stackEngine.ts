/**
 * The StackEngine contract: what the scaling API, `nodefleet preview` and the CLI need from a
 * Pulumi engine. Two implementations pass the same contract tests: the Automation API engine
 * (real clouds) and the simulated engine (mock runtime against a simulated cloud).
 */

/** A program the engine can run in-process (automation) or in a child process (simulated). */
export interface ProgramReference {
  /** Absolute path of a compiled module whose `runProgram(args)` declares the resources and returns the stack outputs. */
  readonly module: string;
  /** JSON-serialisable arguments passed to `runProgram`. */
  readonly args?: unknown;
}

/** A stack config value; `secret` values are set as Pulumi secrets and never printed. */
export interface StackConfigValue {
  readonly value: unknown;
  readonly secret?: boolean;
}

export interface StackDefinition {
  /** Pulumi stack name, e.g. `example` (git) or `example-api` (the API's own stack). */
  readonly stackName: string;
  readonly program: ProgramReference;
  /** Full config keys (`nodefleet:cluster`, ...) to values. */
  readonly config: Readonly<Record<string, StackConfigValue>>;
  /**
   * For git-owned stacks: the Pulumi project directory whose `stacks/Pulumi.<stack>.yaml` (with its
   * `secure:` values, secrets provider and backend) the automation engine uses as it is, instead of
   * a workspace under the data directory; `config` is then not written. The simulated engine,
   * which cannot decrypt, ignores it.
   */
  readonly projectDir?: string;
}

export type StepOp = "create" | "update" | "replace" | "delete" | "same";

export interface ResourceStep {
  readonly op: StepOp;
  readonly urn: string;
  /** Pulumi type token, e.g. `hcloud:index/server:Server`. */
  readonly type: string;
  /** Logical resource name. */
  readonly name: string;
  /** Input keys that changed (update/replace). */
  readonly keys: readonly string[];
  /** Input keys that force the replacement (replace only). */
  readonly replaceKeys?: readonly string[];
  /** Set when applying this step failed; the others still proceed (continueOnError). */
  readonly error?: string;
}

export type ChangeSummary = Record<StepOp, number>;

export interface RunResult {
  readonly kind: "up" | "preview" | "refresh";
  readonly summary: ChangeSummary;
  readonly steps: readonly ResourceStep[];
  readonly outputs: Readonly<Record<string, unknown>>;
  /** True when every step succeeded. */
  readonly succeeded: boolean;
  readonly durationMs: number;
  /** Set by the simulated engine: its output never describes a real cloud. */
  readonly simulated: boolean;
  /**
   * The real engine's own steps in the order they completed, replacement halves included
   * (`create-replacement`, `replace`, `delete-replaced`): what create-before-delete looks like.
   * The simulated engine reports only the logical steps above (a documented difference).
   */
  readonly engineSteps?: ReadonlyArray<{ readonly op: string; readonly urn: string }>;
}

export interface RunOptions {
  /** Aborting cancels the run (the automation engine sends SIGINT to the pulumi CLI). */
  readonly signal?: AbortSignal;
  /** Called once per resource step as it completes, with a running count. */
  readonly onStep?: (step: ResourceStep, count: number) => void;
}

export interface RefreshOptions extends RunOptions {
  /** URNs to refresh (`pulumi refresh --target`); every resource of the stack when absent. */
  readonly targets?: readonly string[];
}

/** One resource as a stack's state holds it. */
export interface StoredResource {
  readonly urn: string;
  readonly type: string;
  readonly id?: string;
  readonly inputs?: Readonly<Record<string, unknown>>;
}

/** A stack's state as its backend holds it now, read without running the engine. */
export interface StoredState {
  /** Changes with every write of the state, by this engine or by anyone else (an import, a person's up, a refresh). */
  readonly digest: string;
  readonly resources: readonly StoredResource[];
}

export interface StackEngine {
  readonly kind: "automation" | "simulated";
  up(stack: StackDefinition, options?: RunOptions): Promise<RunResult>;
  preview(stack: StackDefinition, options?: RunOptions): Promise<RunResult>;
  refresh(stack: StackDefinition, options?: RefreshOptions): Promise<RunResult>;
  outputs(stack: StackDefinition): Promise<Record<string, unknown>>;
  /**
   * The stack's stored state (the preview guard's fingerprint, docs/scaling-api.md); undefined when
   * the engine cannot tell, and then every run is guarded. Optional: the simulated engine has none.
   */
  storedState?(stack: StackDefinition): Promise<StoredState | undefined>;
}

export function emptySummary(): ChangeSummary {
  return { create: 0, update: 0, replace: 0, delete: 0, same: 0 };
}

/** Thrown by up/preview/refresh when the run's AbortSignal fired (the run was stopped). */
export class RunCancelledError extends Error {
  override readonly name = "RunCancelledError";
  constructor(message = "the run was cancelled") {
    super(message);
  }
}

/**
 * Thrown when a run could not complete at all (program error, engine process crash, stack locked by
 * another live process). Per-resource failures do not throw: they are steps with `error`.
 */
export class RunFailedError extends Error {
  override readonly name = "RunFailedError";
  constructor(
    message: string,
    /** Steps applied before the failure (their effects persist in the stack state). */
    readonly steps: readonly ResourceStep[] = [],
  ) {
    super(message);
  }
}

/** The structured logger engines write to (a pino logger fits). */
export interface EngineLogger {
  info(record: object, message?: string): void;
  warn(record: object, message?: string): void;
  error(record: object, message?: string): void;
  debug?(record: object, message?: string): void;
}
