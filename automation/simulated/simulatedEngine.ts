/**
 * The simulated StackEngine: each up/preview runs the stack's program in a child Node process under
 * Pulumi's mock runtime against the simulated cloud persisted in the data directory (see
 * simulatedCloud.ts). Nothing talks to any cloud, and every result and log line says so.
 */
import { type ChildProcess, fork } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { reportStep, runResult } from "../engine/progressFormat";
import { StackQueue } from "../engine/stackQueue";
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
} from "../engine/stackEngine";
import type { ChildMessage, ChildRequest } from "./simulatedChild";
import { SimulatedCloud, StackStateFile, assertStackName } from "./simulatedCloud";
import { type SimulationKnobs, resolveKnobs } from "./simulationKnobs";
import { acquireStackLock, releaseLockOf } from "./stackLock";

export const SIMULATION_BANNER =
  "SIMULATED ENGINE: this is a simulation that talks to no cloud. Servers, addresses, boot times and failures are made up locally.";

export interface SimulatedEngineOptions extends Partial<SimulationKnobs> {
  /** Data directory; the simulated cloud lives in `<dataDir>/simulated-cloud`. */
  readonly dataDir: string;
  /** Pulumi project name used in URNs. Default `nodefleet`. */
  readonly project?: string;
  /** Where knobs not given as options are read from. Default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Structured log (banner, non-`same` steps, crashes). Default: the banner goes to stderr, nothing else is logged. */
  readonly logger?: EngineLogger;
  /** Announce the simulation at construction. Default true. */
  readonly banner?: boolean;
}

/** Resource use of a stack's last completed run (for benchmarks and diagnostics). */
export interface RunStats {
  /** Peak resident set size of the engine child process. */
  readonly maxRssBytes: number;
  readonly pid: number;
}

const CHILD_MODULE = join(__dirname, "simulatedChild.js");

export class SimulatedEngine implements StackEngine {
  readonly kind = "simulated" as const;
  /** Read side of the simulated cloud (servers by label, boot status, orphan injection). */
  readonly cloud: SimulatedCloud;
  private currentKnobs: SimulationKnobs;
  private readonly queue = new StackQueue();
  private readonly project: string;
  private readonly stats = new Map<string, RunStats>();

  constructor(private readonly options: SimulatedEngineOptions) {
    mkdirSync(options.dataDir, { recursive: true, mode: 0o700 });
    this.cloud = new SimulatedCloud(options.dataDir);
    this.project = options.project ?? "nodefleet";
    this.currentKnobs = resolveKnobs(options, options.env ?? process.env);
    if (options.banner !== false) {
      const record = { event: "simulation_banner", simulated: true, dataDir: options.dataDir, knobs: this.knobs };
      if (options.logger) options.logger.warn(record, SIMULATION_BANNER);
      else process.stderr.write(`${SIMULATION_BANNER}\n`);
    }
  }

  /** Peak memory of the child process of the stack's last up/preview, when it reported it. */
  lastRunStats(stack: string): RunStats | undefined {
    return this.stats.get(stack);
  }

  /** Runs queued or in progress on a stack (all stacks when omitted). */
  queueDepth(stack?: string): number {
    return this.queue.depth(stack);
  }

  up(stack: StackDefinition, options: RunOptions = {}): Promise<RunResult> {
    assertStackName(stack.stackName);
    return this.queue.run(stack.stackName, () => this.runChild("up", stack, options));
  }

  preview(stack: StackDefinition, options: RunOptions = {}): Promise<RunResult> {
    assertStackName(stack.stackName);
    return this.queue.run(stack.stackName, () => this.runChild("preview", stack, options));
  }

  /** Drops resources deleted out-of-band (SimulatedCloud.deleteServer) from the stack's state; only `targets` when given. */
  refresh(stack: StackDefinition, options: RefreshOptions = {}): Promise<RunResult> {
    assertStackName(stack.stackName);
    return this.queue.run(stack.stackName, async () => {
      if (options.signal?.aborted) throw new RunCancelledError();
      const started = Date.now();
      const lock = acquireStackLock(this.options.dataDir, stack.stackName);
      try {
        const file = new StackStateFile(this.options.dataDir, stack.stackName);
        const state = file.load();
        const deleted = this.cloud.deletedIds();
        const steps: ResourceStep[] = [];
        const targets = options.targets ? new Set(options.targets) : undefined;
        for (const resource of [...state.resources.values()]) {
          if (targets && !targets.has(resource.urn)) continue;
          const gone = resource.id !== undefined && deleted.has(resource.id);
          if (gone) {
            state.resources.delete(resource.urn);
            file.append({ t: "del", urn: resource.urn });
          }
          const step: ResourceStep = {
            op: gone ? "delete" : "same",
            urn: resource.urn,
            type: resource.type,
            name: resource.name,
            keys: [],
          };
          steps.push(step);
          reportStep(step, steps.length, options, this.options.logger, true);
        }
        file.compact(state);
        return runResult("refresh", steps, state.outputs, started, true);
      } finally {
        lock.release();
      }
    });
  }

  async outputs(stack: StackDefinition): Promise<Record<string, unknown>> {
    assertStackName(stack.stackName);
    return this.cloud.stackOutputs(stack.stackName);
  }

  /** The knobs the next run uses. */
  get knobs(): SimulationKnobs {
    return this.currentKnobs;
  }

  /** Changes knobs from the next run on (a fault lifted, say), as restarting with other variables would. */
  setKnobs(patch: Partial<SimulationKnobs>): void {
    this.currentKnobs = { ...this.currentKnobs, ...patch };
  }

  private runChild(kind: "up" | "preview", stack: StackDefinition, options: RunOptions): Promise<RunResult> {
    if (options.signal?.aborted) return Promise.reject(new RunCancelledError());
    const started = Date.now();
    const request: ChildRequest = {
      kind,
      dataDir: this.options.dataDir,
      stack: stack.stackName,
      project: this.project,
      program: stack.program,
      config: stack.config,
      knobs: this.knobs,
      parentPid: process.pid,
    };
    return new Promise<RunResult>((resolve, reject) => {
      const child: ChildProcess = fork(CHILD_MODULE, [], {
        execArgv: [],
        stdio: ["ignore", "pipe", "pipe", "ipc"],
        serialization: "advanced",
      });
      const steps: ResourceStep[] = [];
      let stderrTail = "";
      let settled = false;
      let cancelled = false;
      const onAbort = () => {
        cancelled = true;
        child.kill("SIGKILL");
      };
      options.signal?.addEventListener("abort", onAbort, { once: true });
      const finish = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        options.signal?.removeEventListener("abort", onAbort);
        outcome();
      };
      child.stdout?.on("data", (chunk: Buffer) =>
        this.options.logger?.debug?.({ event: "program_output", simulated: true }, chunk.toString("utf8").trimEnd()),
      );
      child.stderr?.on("data", (chunk: Buffer) => {
        stderrTail = (stderrTail + chunk.toString("utf8")).slice(-2000);
      });
      child.on("message", (message: ChildMessage) => {
        switch (message.type) {
          case "step":
            steps.push(message.step);
            reportStep(message.step, message.count, options, this.options.logger, true);
            break;
          case "stats":
            this.stats.set(stack.stackName, { maxRssBytes: message.maxRssBytes, pid: child.pid ?? -1 });
            break;
          case "log":
            this.options.logger?.[message.level]({ event: "simulated_engine", simulated: true, stack: stack.stackName }, message.message);
            break;
          case "done":
            finish(() => resolve(runResult(kind, message.steps, message.outputs, started, true)));
            break;
          case "failed":
            finish(() =>
              reject(new RunFailedError(`[simulated] ${kind} of stack ${stack.stackName} failed: ${message.message}`, message.steps)),
            );
            break;
        }
      });
      child.on("error", (error) =>
        finish(() => reject(new RunFailedError(`[simulated] could not start the engine process: ${error.message}`, steps))),
      );
      // "close" comes after the IPC channel drained, so a final "done" message is never missed.
      child.on("close", (code, signal) => {
        if (cancelled) releaseLockOf(this.options.dataDir, stack.stackName, child.pid ?? -1);
        finish(() => {
          if (cancelled) {
            reject(new RunCancelledError(`[simulated] ${kind} of stack ${stack.stackName} was cancelled after ${steps.length} step(s)`));
            return;
          }
          const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
          const detail = stderrTail.trim() ? `: ${stderrTail.trim().split("\n").slice(-3).join(" | ")}` : "";
          this.options.logger?.error(
            { event: "simulated_engine_crash", simulated: true, stack: stack.stackName, code, signal, steps: steps.length },
            "engine process died mid-run",
          );
          reject(
            new RunFailedError(
              `[simulated] the engine process ${how} mid-run after ${steps.length} step(s); the stack keeps what was applied${detail}`,
              steps,
            ),
          );
        });
      });
      child.send(request);
    });
  }
}
