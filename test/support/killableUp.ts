/**
 * `pulumi up --stack local` run as a user's CLI that a test SIGKILLs alone, as `kill -9` of the
 * user's pulumi would: its plugins outlive it in process groups of their own, so the kill records
 * them (pid and start time) for the test to stop once it has seen what they did.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { descendantProcesses, processStartTime } from "../../automation/engine/cliProcesses";
import { findTool } from "../../automation/engine/toolchain";
import { UP } from "./localFleet";

export class KillableUp {
  private text = "";
  private leftovers: Array<{ pid: number; startTime: string }> = [];
  private readonly exited: Promise<void>;

  private constructor(private readonly child: ChildProcess) {
    child.stdout!.on("data", (chunk: Buffer) => (this.text += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (this.text += chunk.toString()));
    this.exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  }

  /** Starts the run in `project` with the local cloud's `env`. */
  static start(project: string, env: Record<string, string>): KillableUp {
    const pulumi = findTool("pulumi", { ...process.env, ...env })!;
    return new KillableUp(spawn(pulumi, UP, { cwd: project, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] }));
  }

  /** What the CLI printed so far, both streams. */
  get output(): string {
    return this.text;
  }

  /** SIGKILLs the CLI alone and waits for it to exit; its plugins keep running. */
  async kill(): Promise<void> {
    this.leftovers = descendantProcesses(this.child.pid!).flatMap((pid) => {
      const startTime = processStartTime(pid);
      return startTime ? [{ pid, startTime }] : [];
    });
    this.child.kill("SIGKILL");
    await this.exited;
  }

  /** Stops the plugins the kill left (those still the same processes). */
  stopLeftovers(): void {
    for (const p of this.leftovers) if (processStartTime(p.pid) === p.startTime) process.kill(p.pid, "SIGKILL");
    this.leftovers = [];
  }

  /** For `after`: the CLI if it still runs, and what it left. */
  stop(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    this.stopLeftovers();
  }
}
