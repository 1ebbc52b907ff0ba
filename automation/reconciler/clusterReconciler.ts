/**
 * The batching reconciler of one cluster: at most one engine run at a time; every change (create,
 * delete, retry) arriving while a run is in progress or inside the batch window goes into the next
 * single run. Claims move PENDING -> PROVISIONING (in the transaction that records the run) ->
 * RUNNING | FAILED, and TERMINATING -> GONE. After a crash, PROVISIONING and TERMINATING claims are
 * simply part of the next run: `pulumi up` against the persisted state converges them.
 */
import { EventEmitter } from "node:events";
import type { Logger } from "pino";
import type { RunResult, StackDefinition, StackEngine, StoredState } from "../engine/stackEngine";
import type { Claim } from "../store/claimStore";
import type { ClaimRepository } from "../store/claimRepository";
import type { OperationKind } from "../store/operationLog";
import type { GuardFingerprint } from "../store/guardFingerprints";
import { runAffected, type RunStore } from "../store/runStore";
import { DEFAULT_BATCH_WINDOW, DEFAULT_RETRY, retryDelay, windowClosesAt, type BatchWindowConfig, type RetryConfig } from "./batchWindow";
import { isStorageFailure, storageFailureReason } from "../store/storageFailure";
import { classifyFailure, sourceName, type FailureSource } from "./failureClass";
import { refreshTargetsBeforeDelete, refreshTargetsFromState } from "./refreshBeforeDelete";
import { changedParts, guardFingerprint, withState } from "./guardFingerprint";
import {
  DEFAULT_CREATE_DEADLINE_MS,
  previewGuardViolations,
  runOutcome,
  type GuardViolation,
  type LaunchBackoffMark,
  type WaitingClaim,
} from "./runOutcome";
import { errorMessage } from "../../components/shared/errorMessage";
import { DEFAULT_SHARD } from "./apiShard";
import type { RunDispatch } from "./runScheduler";

export interface RunObserver {
  runFinished(clusterId: string, kind: OperationKind, result: "succeeded" | "failed", durationMs: number): void;
}

/**
 * Why the service is degraded: a refused preview (with its violations), runs that fail as a whole
 * (store or engine), or runs stuck on an API that does not answer (`unreachable`, with the claims
 * waiting for it).
 */
export interface Degradation {
  readonly reason: string;
  readonly operationId?: number;
  readonly violations?: readonly GuardViolation[];
  readonly unreachable?: FailureSource | "unknown";
  /** Claims held back by the unreachable API (the first few). */
  readonly waitingClaims?: readonly string[];
  readonly since: string;
}

/** Claims named in a degradation; the count says the rest. */
const NAMED_CLAIMS = 10;

export interface ClusterReconcilerOptions {
  readonly clusterId: string;
  /** The API stack shard whose claims this reconciler runs (apiShard.ts; default 0, the `<cluster>-api` stack). */
  readonly shard?: string;
  /**
   * Runs each engine run when the cluster's shards allow (a bound on runs at once, shared by the
   * cluster's reconcilers); default: at once.
   */
  readonly runGate?: <T>(run: () => Promise<T>) => Promise<T>;
  /** The claims it reads (the embedded store or one shared by several replicas: claimRepository.ts). */
  readonly store: Pick<ClaimRepository, "list" | "countByStatusInShard" | "timestamp">;
  /** Where its runs are begun and recorded, the operation log and the guard fingerprints (runStore.ts). */
  readonly runs: RunStore;
  readonly engine: StackEngine;
  /** The API stack for these members; called once per run (its preview and up), so templates, config and shared look-ups are fresh each time. */
  readonly stackFor: (members: readonly Claim[]) => StackDefinition | Promise<StackDefinition>;
  readonly batch?: BatchWindowConfig;
  readonly retry?: RetryConfig;
  /** How long after admission a create's transient failures are retried before it fails (default 30 min). */
  readonly createDeadlineMs?: number;
  /**
   * Preview before an up and refuse to replace or delete members that should stay (default true);
   * only when something that could move existing members changed since the last successful up (its
   * guard fingerprint is kept in `runs`). With an engine that cannot read its stored state, every
   * run is previewed.
   */
  readonly previewGuard?: boolean;
  /** The fingerprint of a run of `stack` against `state` (default guardFingerprint). */
  readonly fingerprintOf?: (stack: StackDefinition, state: StoredState) => GuardFingerprint;
  /** Resolves when the engine can run (the simulated engine first applies the git stack). */
  readonly ready?: Promise<unknown>;
  /** A create failed in a way the next create of its offering (or pool) would repeat: back it off. */
  readonly onLaunchBackoff?: (clusterId: string, mark: LaunchBackoffMark) => void;
  readonly observer?: RunObserver;
  readonly logger?: Logger;
  /** Runs scheduled outside the process (runScheduler.ts), coming back through runDispatched; default: this reconciler's own window and retries. */
  readonly dispatch?: RunDispatch;
}

/** One engine run in progress: what it is for, and the operation recording the engine call under way. */
interface Run {
  readonly claims: readonly Claim[];
  readonly affected: readonly string[];
  readonly members: readonly Claim[];
  readonly terminating: readonly Claim[];
  readonly guarded: boolean;
  readonly signal: AbortSignal;
  readonly started: number;
  readonly log: Logger | undefined;
  /** The guard's preview first, then the up: the guard moves both on. */
  operationId: number;
  running: OperationKind;
}

/** A run's guard fingerprint and the stored state it was taken from. */
interface TakenFingerprint {
  readonly fingerprint: GuardFingerprint;
  readonly state: StoredState;
}

/** An up's result, and the fingerprint to store with its outcome when it went through. */
interface Applied {
  readonly result: RunResult;
  readonly fingerprint?: GuardFingerprint;
}

export class ClusterReconciler extends EventEmitter {
  readonly clusterId: string;
  readonly shard: string;
  private readonly batch: BatchWindowConfig;
  private readonly retry: RetryConfig;
  private windowFirst: number | undefined;
  private windowLast: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private current: Promise<void> | undefined;
  private abort: AbortController | undefined;
  private failures = 0;
  private stopped = false;
  private degradation: Degradation | undefined;
  private runs = 0;
  /** Dispatched runs: a change being handed on, another change since, and a failed hand-over. */
  private dispatching = false;
  private dispatchAgain = false;
  private dispatchFailures = 0;
  private dispatchProblem: Degradation | undefined;
  /** Dispatched runs: the scheduler's cancellation of the run under way, whether it must retry, what it did. */
  private cancellation: AbortSignal | undefined;
  private retryWanted = false;
  private lastSummary: string | undefined;

  constructor(private readonly options: ClusterReconcilerOptions) {
    super();
    // Every create with waitSeconds listens for claim changes.
    this.setMaxListeners(0);
    this.clusterId = options.clusterId;
    this.shard = options.shard ?? DEFAULT_SHARD;
    this.batch = options.batch ?? DEFAULT_BATCH_WINDOW;
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  /** Where the shard's guard fingerprint is kept: the cluster's id for shard 0 (as before shards), else its stack's. */
  private get fingerprintKey(): string {
    return this.shard === DEFAULT_SHARD ? this.clusterId : `${this.clusterId}/${this.shard}`;
  }

  /** Engine runs (up attempts) started by this instance. */
  get runCount(): number {
    return this.runs;
  }

  get busy(): boolean {
    return this.current !== undefined;
  }

  get degraded(): Degradation | undefined {
    return this.degradation ?? this.dispatchProblem;
  }

  /** Claims waiting for a run: what the next run has to do. */
  async queueDepth(): Promise<number> {
    const counts = await this.options.store.countByStatusInShard(this.clusterId, this.shard);
    return counts.PENDING + (this.busy ? 0 : counts.PROVISIONING + counts.TERMINATING);
  }

  /** Picks up what a previous process left unfinished (a store that cannot be read: the next change, or a retry, tries again). */
  start(): void {
    this.options.store.list(this.clusterId, { statuses: ["PENDING", "PROVISIONING", "TERMINATING"], shard: this.shard }).then(
      (unfinished) => {
        if (unfinished.length === 0) return;
        this.options.logger?.info(
          { cluster: this.clusterId, shard: this.shard, claims: unfinished.length },
          "reconciling unfinished claims",
        );
        this.notify();
      },
      (error: unknown) => {
        this.options.logger?.error({ err: error, cluster: this.clusterId, shard: this.shard }, "could not read the unfinished claims");
        this.notify();
      },
    );
  }

  /** A change arrived: make sure a run will pick it up. */
  notify(): void {
    if (this.stopped) return;
    if (this.options.dispatch) return this.dispatchChange();
    const now = Date.now();
    this.windowFirst ??= now;
    this.windowLast = now;
    if (!this.current) this.schedule();
  }

  private schedule(): void {
    if (this.windowFirst === undefined || this.windowLast === undefined || this.stopped) return;
    clearTimeout(this.timer);
    const delay = Math.max(0, windowClosesAt(this.windowFirst, this.windowLast, this.batch) - Date.now());
    this.timer = setTimeout(() => this.runNow(), delay);
  }

  private runNow(): void {
    if (this.current || this.stopped) return;
    this.windowFirst = this.windowLast = undefined;
    void this.startRun();
  }

  /**
   * Hands the change to the scheduler; changes while one is being handed on go with one more. A
   * failed hand-over degrades the shard and is tried again with the retry backoff.
   */
  private dispatchChange(): void {
    if (this.dispatching) {
      this.dispatchAgain = true;
      return;
    }
    this.dispatching = true;
    this.options
      .dispatch!.changed(this.clusterId, this.shard)
      .then(
        () => {
          this.dispatchFailures = 0;
          this.dispatchProblem = undefined;
        },
        (error: unknown) => {
          this.dispatchFailures += 1;
          const delay = retryDelay(this.dispatchFailures, this.retry);
          const message = errorMessage(error).slice(0, 500);
          this.dispatchProblem = {
            reason: `could not hand the change to the run scheduler: ${message}; retrying`,
            since: this.dispatchProblem?.since ?? new Date().toISOString(),
          };
          this.options.logger?.warn(
            { cluster: this.clusterId, shard: this.shard, err: message, delayMs: delay },
            "run scheduler unreachable",
          );
          clearTimeout(this.retryTimer);
          this.retryTimer = setTimeout(() => this.notify(), delay);
        },
      )
      .finally(() => {
        this.dispatching = false;
        if (this.dispatchAgain) {
          this.dispatchAgain = false;
          this.notify();
        }
      });
  }

  /**
   * One run the scheduler hands back (its activity): the summary of what it did; rejected when the
   * run failed as a whole or left claims to retry (the scheduler retries with its backoff), or when
   * this replica stops before recording it (another worker runs it). Aborting `cancellation` (an
   * operator's cancel) stops the engine run, which is recorded as abandoned.
   */
  async runDispatched(cancellation: AbortSignal): Promise<string> {
    // A previous attempt still finishing here (its activity timed out) ends first: one run of the stack at a time.
    while (this.current) await this.current;
    if (this.stopped) throw new Error("this replica is stopping; another worker takes the run");
    this.retryWanted = false;
    this.lastSummary = undefined;
    this.cancellation = cancellation;
    const cancel = () => this.abort?.abort(cancellation.reason);
    cancellation.addEventListener("abort", cancel, { once: true });
    try {
      await this.startRun();
    } finally {
      cancellation.removeEventListener("abort", cancel);
      this.cancellation = undefined;
    }
    if (cancellation.aborted) throw cancellation.reason;
    if (this.retryWanted) throw new Error(this.degraded?.reason ?? "the run must be retried");
    if (this.lastSummary === undefined) throw new Error("this replica stopped before the run was recorded; another worker runs it");
    return this.lastSummary;
  }

  /** The run, through the cluster's gate; its failures degrade the shard and retry. */
  private startRun(): Promise<void> {
    const gate = this.options.runGate;
    this.current = (gate ? gate(() => this.runOnce()) : this.runOnce())
      .catch((error: unknown) => {
        // The store failed (disk full, I/O error) or something unforeseen: degraded, and retried with backoff.
        const message = isStorageFailure(error) ? storageFailureReason(error) : errorMessage(error);
        this.degrade(`reconciling failed: ${message.slice(0, 500)}; retrying`);
        this.options.logger?.error({ err: error, cluster: this.clusterId }, "reconcile failed");
        this.scheduleRetry();
      })
      .finally(() => {
        this.current = undefined;
        this.abort = undefined;
        this.schedule();
      });
    return this.current;
  }

  private scheduleRetry(): void {
    if (this.stopped) return;
    this.failures += 1;
    if (this.options.dispatch) {
      // The scheduler retries: the dispatched run fails with the degradation's reason.
      this.retryWanted = true;
      return;
    }
    const delay = retryDelay(this.failures, this.retry);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.notify(), delay);
    this.options.logger?.warn({ cluster: this.clusterId, attempt: this.failures, delayMs: delay }, "engine run will be retried");
  }

  get stopping(): boolean {
    return this.stopped;
  }

  /**
   * No new run starts from now on, and whoever waits for claim changes (creates with waitSeconds)
   * is told at once ("stopping"), so a shutdown never waits for them; the run in progress goes on.
   */
  beginShutdown(): void {
    if (!this.stopped) {
      this.stopped = true;
      this.emit("stopping");
    }
    clearTimeout(this.timer);
    clearTimeout(this.retryTimer);
  }

  /** Waits for the run in progress (at most graceMs), then aborts it; no new run starts afterwards. */
  async stop(graceMs = 30_000): Promise<void> {
    this.beginShutdown();
    const current = this.current;
    if (!current) return;
    let timeout: NodeJS.Timeout | undefined;
    const expired = new Promise<"expired">((resolve) => {
      timeout = setTimeout(() => resolve("expired"), graceMs);
    });
    const outcome = await Promise.race([current.then(() => "done" as const), expired]);
    clearTimeout(timeout);
    if (outcome === "expired") {
      this.options.logger?.warn({ cluster: this.clusterId }, "abandoning the engine run in progress; it is resumed on the next start");
      this.abort?.abort();
      // An engine that ignores the abort must not hold the shutdown (or the process) any longer.
      let hold: NodeJS.Timeout | undefined;
      await Promise.race([current, new Promise((resolve) => (hold = setTimeout(resolve, 5000)))]);
      clearTimeout(hold);
    }
  }

  /** Keeps the first moment of a continuing failure as `since`. */
  private degrade(reason: string, stuck?: Pick<Degradation, "unreachable" | "waitingClaims">): void {
    const since = this.degradation && !this.degradation.violations ? this.degradation.since : new Date().toISOString();
    this.degradation = { reason, ...stuck, since };
  }

  /** A run that went through but left claims waiting on an API that did not answer. */
  private stuckOn(waiting: readonly WaitingClaim[]): void {
    const sources = [...new Set(waiting.map((w) => w.source))];
    const unreachable = sources.length === 1 && sources[0] ? sources[0] : "unknown";
    const named = waiting.slice(0, NAMED_CLAIMS).map((w) => w.nodeId);
    this.degrade(
      `${waiting.length} claim(s) waiting on ${sources.map(sourceName).join(" and ")}, which did not answer (${waiting[0]!.reason}); retrying with backoff until the create's deadline`,
      { unreachable, waitingClaims: named },
    );
  }

  private changed(nodeIds: readonly string[]): void {
    if (nodeIds.length > 0) this.emit("claims", nodeIds);
  }

  /** One engine run: its claims marked, then the guard's preview and the up, then their outcome recorded. */
  private async runOnce(): Promise<void> {
    await this.options.ready;
    if (this.stopped) return;
    // Replicas sharing the runs (PostgreSQL) take turns on the shard's stack; the embedded store runs at once.
    await this.options.runs.exclusively(
      this.clusterId,
      this.shard,
      () => this.runHoldingLock(),
      () => this.stopped,
    );
  }

  private async runHoldingLock(): Promise<void> {
    const run = await this.beginRun();
    if (!run) return;
    const applied = await this.apply(run);
    if (applied) await this.record(run, applied);
  }

  /** Marks what this run is for, in the transaction that records it; undefined when nothing is left to reconcile. */
  private async beginRun(): Promise<Run | undefined> {
    const { clusterId } = this.options;
    const guarded = this.options.previewGuard !== false;
    const running: OperationKind = guarded ? "preview" : "up";
    // Read and marked in one transaction: no request slips in between. Every engine run is an
    // operation: the guard's preview first, then the up it allows (or refuses).
    const begun = await this.options.runs.beginRun({ clusterId, shard: this.shard, kind: running });
    if (!begun) {
      // Nothing left to reconcile (the claims a failing run was for were deleted): no failure holds any more.
      this.degradation = undefined;
      this.failures = 0;
      this.lastSummary = "nothing left to reconcile";
      return undefined;
    }
    const { claims, members, operationId } = begun;
    const affected = runAffected(claims);
    const pending = claims.filter((c) => c.status === "PENDING");
    this.changed(pending.map((c) => c.nodeId));
    const terminating = claims.filter((c) => c.status === "TERMINATING");
    this.runs += 1;
    this.abort = new AbortController();
    if (this.cancellation?.aborted) this.abort.abort(this.cancellation.reason);
    const started = Date.now();
    const log = this.options.logger?.child({ cluster: clusterId, shard: this.shard, operation: operationId });
    log?.info({ members: members.length, creating: pending.length, terminating: terminating.length }, "engine run starting");
    return { claims, affected, members, terminating, guarded, signal: this.abort.signal, started, log, operationId, running };
  }

  /**
   * The engine's part: the stack, its guard fingerprint, the guard's preview when on and something
   * that could move existing members changed, a refresh of what the run deletes, then the up and
   * the fingerprint of the state it left; undefined when refused or failed.
   */
  private async apply(run: Run): Promise<Applied | undefined> {
    try {
      const stack = await this.options.stackFor(run.members);
      const taken = await this.takeFingerprint(run, stack);
      const stored = taken ? await this.options.runs.fingerprint(this.fingerprintKey) : undefined;
      const changed = taken ? changedParts(stored, taken.fingerprint) : undefined;
      const unchanged = taken !== undefined && changed?.length === 0;
      let targets: string[];
      if (run.guarded && !unchanged) {
        run.log?.info({ changed: changed ?? "unknown" }, "preview guard runs: something that could move existing members changed");
        const preview = await this.guard(run, stack);
        if (!preview) return undefined;
        targets = refreshTargetsBeforeDelete(preview.steps);
      } else {
        if (run.guarded) {
          // The run can only add members and remove terminating ones: its operation is the up.
          await this.options.runs.operationBecomesUp(run.operationId);
          run.running = "up";
          run.log?.info({}, "preview guard skipped: nothing that could move existing members changed since the last up");
        }
        targets = await this.deleteTargets(run, stack, unchanged ? taken : undefined);
      }
      await this.refreshBeforeDelete(run, stack, targets);
      const result = await this.options.engine.up(stack, { signal: run.signal });
      const after = taken && result.succeeded ? await this.storedState(run, stack) : undefined;
      return { result, ...(taken && after ? { fingerprint: withState(taken.fingerprint, after) } : {}) };
    } catch (error) {
      await this.engineCallFailed(run, error);
      return undefined;
    }
  }

  /** The run's guard fingerprint, or undefined (an engine without stored state, or a failure: the guard runs). */
  private async takeFingerprint(run: Run, stack: StackDefinition): Promise<TakenFingerprint | undefined> {
    const state = await this.storedState(run, stack);
    if (!state) return undefined;
    try {
      const fingerprint = (this.options.fingerprintOf ?? ((def, at) => guardFingerprint({ stack: def, state: at })))(stack, state);
      return { fingerprint, state };
    } catch (error) {
      run.log?.warn({ err: errorMessage(error) }, "could not take the preview guard's fingerprint; the guard runs");
      return undefined;
    }
  }

  private async storedState(run: Run, stack: StackDefinition): Promise<StoredState | undefined> {
    if (!this.options.engine.storedState) return undefined;
    try {
      return await this.options.engine.storedState(stack);
    } catch (error) {
      run.log?.warn({ err: errorMessage(error) }, "could not read the stack's stored state; the guard runs and no fingerprint is kept");
      return undefined;
    }
  }

  /**
   * What a run without the guard's preview refreshes before it deletes: nothing when it deletes
   * nothing; from the stored state when its fingerprint is unchanged; else from a preview of it.
   */
  private async deleteTargets(run: Run, stack: StackDefinition, unchanged: TakenFingerprint | undefined): Promise<string[]> {
    if (run.terminating.length === 0) return [];
    if (unchanged)
      return refreshTargetsFromState(
        unchanged.state.resources,
        run.terminating.map((c) => c.nodeId),
      );
    const preview = await this.options.engine.preview(stack, { signal: run.signal });
    return refreshTargetsBeforeDelete(preview.steps);
  }

  /**
   * Refreshes the servers and placement groups the run is about to delete, so that one already gone
   * outside Pulumi (console, abuse lock) leaves the state instead of failing its delete
   * (refreshBeforeDelete.ts).
   */
  private async refreshBeforeDelete(run: Run, stack: StackDefinition, targets: readonly string[]): Promise<void> {
    if (targets.length === 0) return;
    const refreshed = await this.options.engine.refresh(stack, { signal: run.signal, targets });
    const gone = refreshed.steps.filter((step) => step.op === "delete").map((step) => step.name);
    if (gone.length > 0) run.log?.warn({ gone }, "resources the run deletes were already gone outside Pulumi; dropped from the state");
  }

  /** Previews the run and refuses it when it would replace or delete members that should stay; the preview when allowed. */
  private async guard(run: Run, stack: StackDefinition): Promise<RunResult | undefined> {
    const { runs, clusterId } = this.options;
    const previewStarted = Date.now();
    const preview = await this.options.engine.preview(stack, { signal: run.signal });
    const failedSteps = preview.steps.filter((step) => step.error);
    await runs.finishOperation(run.operationId, {
      result: preview.succeeded ? "succeeded" : "failed",
      summary: preview.summary,
      ...(failedSteps.length > 0
        ? {
            error: failedSteps
              .map((step) => `${step.name}: ${step.error}`)
              .join("; ")
              .slice(0, 2000),
          }
        : {}),
    });
    this.options.observer?.runFinished(clusterId, "preview", preview.succeeded ? "succeeded" : "failed", Date.now() - previewStarted);
    run.operationId = await runs.startOperation(clusterId, this.shard, "up", run.affected);
    run.running = "up";
    const violations = previewGuardViolations(preview.steps, run.claims);
    if (violations.length > 0) {
      const reason = `preview guard refused the run: it would ${violations.map((v) => `${v.op} ${v.name}`).join(", ")}`;
      await runs.finishOperation(run.operationId, { result: "failed", summary: preview.summary, error: reason, details: { violations } });
      this.degradation = { reason, operationId: run.operationId, violations, since: new Date().toISOString() };
      this.options.observer?.runFinished(clusterId, "up", "failed", Date.now() - run.started);
      run.log?.error({ violations }, reason);
      this.scheduleRetry();
      return undefined;
    }
    // The guard's refusal is over; an outage still counts until a run goes through.
    if (this.degradation?.violations) this.degradation = undefined;
    return preview;
  }

  /** A preview or up that threw: abandoned when the service stopped it, else failed, degraded and retried. */
  private async engineCallFailed(run: Run, error: unknown): Promise<void> {
    const { runs, clusterId } = this.options;
    const message = errorMessage(error);
    if (this.stopped && run.signal.aborted) {
      await runs.finishOperation(run.operationId, {
        result: "abandoned",
        error: "service stopped during the run; resumed on the next start",
      });
      return;
    }
    if (this.cancellation?.aborted) {
      await runs.finishOperation(run.operationId, {
        result: "abandoned",
        error: "cancelled through the run scheduler; its claims are run with the next change",
      });
      run.log?.warn({ kind: run.running }, "engine run cancelled through the run scheduler");
      return;
    }
    await runs.finishOperation(run.operationId, { result: "failed", error: message.slice(0, 2000) });
    const failure = classifyFailure(message);
    this.degrade(
      `the engine's ${run.running} failed: ${message.slice(0, 500)}; retrying`,
      failure.transient ? { unreachable: failure.source ?? "unknown" } : undefined,
    );
    this.options.observer?.runFinished(clusterId, run.running, "failed", Date.now() - run.started);
    run.log?.warn({ err: message, kind: run.running }, "engine run failed");
    this.scheduleRetry();
  }

  /**
   * Stores what the up did to each claim, finishes its operation and keeps (or drops) the guard
   * fingerprint in one transaction, then reports and retries.
   */
  private async record(run: Run, { result, fingerprint }: Applied): Promise<void> {
    const { store, runs, clusterId } = this.options;
    const { members, terminating, started, log } = run;
    const outcome = runOutcome({
      members,
      terminating,
      result,
      at: store.timestamp(),
      now: Date.now(),
      createDeadlineMs: this.options.createDeadlineMs ?? DEFAULT_CREATE_DEADLINE_MS,
    });
    const failedSteps = result.steps.filter((s) => s.error);
    // A claim a DELETE moved to TERMINATING during the run keeps that status (claimOutcomeWrite).
    const changed = await runs.recordRun({
      clusterId,
      operationId: run.operationId,
      updates: outcome.updates,
      operation: {
        result: result.succeeded ? "succeeded" : "failed",
        summary: result.summary,
        ...(failedSteps.length > 0
          ? {
              error: failedSteps
                .map((s) => `${s.name}: ${s.error}`)
                .join("; ")
                .slice(0, 2000),
            }
          : {}),
      },
      fingerprintKey: this.fingerprintKey,
      // Only a run that went through whole leaves a state the next one may skip the preview against.
      fingerprint: fingerprint && result.succeeded && !outcome.retry ? fingerprint : undefined,
    });
    // The run went through and its outcome is stored: whatever degraded the service has passed,
    // unless claims still wait on an API that did not answer.
    if (outcome.waiting.length > 0) {
      this.stuckOn(outcome.waiting);
      log?.warn({ waiting: outcome.waiting.length, reason: outcome.waiting[0]!.reason }, "claims wait on an unreachable API; retrying");
    } else {
      this.degradation = undefined;
    }
    for (const update of outcome.updates) {
      if (update.backoff) this.options.onLaunchBackoff?.(clusterId, update.backoff);
    }
    this.options.observer?.runFinished(clusterId, "up", result.succeeded ? "succeeded" : "failed", Date.now() - started);
    log?.info({ summary: result.summary, durationMs: Date.now() - started, succeeded: result.succeeded }, "engine run finished");
    this.lastSummary = `operation ${run.operationId}: ${result.summary}`;
    this.changed(changed);
    if (outcome.retry) this.scheduleRetry();
    else this.failures = 0;
  }
}
