/**
 * Runs documentation shell blocks the way a reader does in a few terminals: foreground blocks one
 * after another in bash (`set -euo pipefail`), each starting with the variables the previous one
 * exported (so `source .nodefleet/local/env` carries over); background blocks in their own process
 * group until `stop()`. Every group is reaped if the test runner is stopped (processGroups.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readiness, ShellBlock } from "./markdownShellBlocks";
import { killGroup, trackGroup, untrackGroup } from "./processGroups";

export interface BlockRun {
  readonly block: ShellBlock;
  /** stdout and stderr as they interleaved. */
  readonly output: string;
}

interface Background {
  readonly block: ShellBlock;
  readonly child: ChildProcess;
  output: string;
  exited: boolean;
}

export class ShellSession {
  private readonly stateDir = mkdtempSync(join(tmpdir(), "nodefleet-shell-"));
  private exports = 0;
  private readonly background: Background[] = [];

  constructor(
    private readonly cwd: string,
    private readonly env: NodeJS.ProcessEnv,
    private readonly blockTimeoutMs = 300_000,
  ) {}

  /** The script a block runs as: the previous block's exports, the block, then its own exports. */
  private wrap(block: ShellBlock, saveExports: boolean): string {
    const previous = join(this.stateDir, `exports-${this.exports}`);
    const lines = ["set -euo pipefail", `if [ -f '${previous}' ]; then source '${previous}'; fi`, block.script];
    if (saveExports) lines.push(`export -p > '${join(this.stateDir, `exports-${this.exports + 1}`)}'`);
    return lines.join("\n");
  }

  private spawnBlock(block: ShellBlock, saveExports: boolean): ChildProcess {
    const child = spawn("bash", ["-c", this.wrap(block, saveExports)], {
      cwd: this.cwd,
      env: this.env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    trackGroup(child.pid!);
    return child;
  }

  /** Runs a foreground block to its end; throws with its output when it fails or overruns. */
  async run(block: ShellBlock): Promise<BlockRun> {
    const child = this.spawnBlock(block, true);
    let output = "";
    child.stdout!.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr!.on("data", (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => killGroup(child.pid!, "SIGKILL"), this.blockTimeoutMs);
    const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
    clearTimeout(timer);
    untrackGroup(child.pid!);
    if (code !== 0)
      throw new Error(
        `the block at line ${block.line} exited with ${code}:\n${block.script}\n--- output ---\n${output}${this.backgroundOutput()}`,
      );
    if (existsSync(join(this.stateDir, `exports-${this.exports + 1}`))) this.exports++;
    return { block, output };
  }

  /** Starts a background block and waits until it is ready. */
  async start(block: ShellBlock, readiness: Readiness, timeoutMs = 180_000): Promise<void> {
    const child = this.spawnBlock(block, false);
    const entry: Background = { block, child, output: "", exited: false };
    this.background.push(entry);
    child.stdout!.on("data", (c: Buffer) => (entry.output += c.toString()));
    child.stderr!.on("data", (c: Buffer) => (entry.output += c.toString()));
    child.once("close", () => (entry.exited = true));
    const deadline = Date.now() + timeoutMs;
    while (!(await isReady(entry, readiness))) {
      if (entry.exited) throw new Error(`the background block at line ${block.line} exited before it was ready:\n${entry.output}`);
      if (Date.now() > deadline)
        throw new Error(`the background block at line ${block.line} was not ready within ${timeoutMs / 1000} s:\n${entry.output}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  private backgroundOutput(): string {
    return this.background.map((b) => `\n--- background block at line ${b.block.line} ---\n${b.output.slice(-4000)}`).join("");
  }

  /** Ctrl-C to every background block (as a reader would), then SIGKILL to what is left after 30 s. */
  async stop(): Promise<void> {
    for (const b of this.background) if (!b.exited) killGroup(b.child.pid!, "SIGINT");
    const deadline = Date.now() + 30_000;
    while (this.background.some((b) => !b.exited) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    for (const b of this.background) {
      killGroup(b.child.pid!, "SIGKILL");
      untrackGroup(b.child.pid!);
    }
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}

async function isReady(entry: Background, readiness: Readiness): Promise<boolean> {
  if ("outputIncludes" in readiness) return entry.output.includes(readiness.outputIncludes);
  try {
    const response = await fetch(readiness.urlAnswers, { signal: AbortSignal.timeout(2000) });
    return response.ok;
  } catch {
    return false;
  }
}
