/**
 * Moves an API stack's state home, once: earlier versions kept it in PULUMI_BACKEND_URL (the git
 * stack's backend) whenever that was set; it now lives in the data directory's file backend, next
 * to the store it must agree with. The stack is exported from the old backend, imported into the
 * new one and removed from the old one (a duplicate there would be a stale second record of the
 * same servers). A marker file written before the import makes a move cut short by a crash resume
 * on the next start instead of trusting a half-made copy.
 */
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Deployment, LocalWorkspace, type PulumiCommand } from "@pulumi/pulumi/automation";
import { fileBackendDir, stackCheckpointPath } from "./fileBackendState";
import type { EngineLogger } from "./stackEngine";

export interface StackStateMove {
  readonly stackName: string;
  readonly project: string;
  /** The stack's workspace (its settings file, with the encryption salt both backends share). */
  readonly workDir: string;
  /** The backend it may still be in. */
  readonly from: string;
  /** nodefleet's own file backend URL it belongs in. */
  readonly to: string;
  /** The CLI's environment (passphrase, PULUMI_HOME, credentials of the old backend). */
  readonly envVars: Record<string, string>;
  readonly pulumiCommand: PulumiCommand;
  readonly logger?: EngineLogger;
}

const MARKER = "state-moving-from-PULUMI_BACKEND_URL";

function workspace(move: StackStateMove, backendUrl: string, workDir: string): Promise<LocalWorkspace> {
  return LocalWorkspace.create({
    workDir,
    pulumiCommand: move.pulumiCommand,
    envVars: { ...move.envVars, PULUMI_BACKEND_URL: backendUrl },
    projectSettings: { name: move.project, runtime: "nodejs", backend: { url: backendUrl } },
  });
}

async function holds(ws: LocalWorkspace, stackName: string): Promise<boolean> {
  return (await ws.listStacks()).some((s) => s.name === stackName || s.name.endsWith(`/${stackName}`));
}

/**
 * Moves the stack when the new backend does not hold it yet and the old one does (or a move was
 * cut short). Returns whether it moved anything. Every step is idempotent.
 */
export async function moveStackStateHome(move: StackStateMove): Promise<boolean> {
  const toDir = fileBackendDir(move.to);
  if (!toDir) throw new Error("the API stack's state can only be moved into a file backend");
  const marker = join(move.workDir, MARKER);
  const resuming = existsSync(marker);
  if (!resuming && existsSync(stackCheckpointPath(toDir, move.project, move.stackName))) return false;
  // A file backend that does not exist holds nothing; any other that cannot be asked stops the
  // selection: a new, empty stack made meanwhile would forget servers the old state holds.
  const fromDir = fileBackendDir(move.from);
  if (fromDir !== undefined && !existsSync(fromDir)) return false;
  // A workspace of its own for the old backend: the stack's own names the new one in its Pulumi.yaml.
  const oldDir = join(move.workDir, ".old-backend");
  mkdirSync(oldDir, { recursive: true, mode: 0o700 });
  try {
    const old = await workspace(move, move.from, oldDir);
    if (!(await holds(old, move.stackName))) {
      // Nothing there: a new stack, or a move whose last step (removal) was done.
      rmSync(marker, { force: true });
      return resuming;
    }
    if (!resuming) {
      writeFileSync(`${marker}.tmp`, `${JSON.stringify({ startedAt: new Date().toISOString() })}\n`, { mode: 0o600 });
      renameSync(`${marker}.tmp`, marker);
    }
    const deployment: Deployment = await old.exportStack(move.stackName);
    const home = await workspace(move, move.to, move.workDir);
    const stacks = await home.listStacks();
    if (!stacks.some((s) => s.name === move.stackName || s.name.endsWith(`/${move.stackName}`))) await home.createStack(move.stackName);
    await home.importStack(move.stackName, deployment);
    await old.removeStack(move.stackName, { force: true, preserveConfig: true });
    rmSync(marker, { force: true });
    move.logger?.warn(
      { event: "state_moved", stack: move.stackName, to: toDir },
      `moved stack ${move.stackName}'s state from PULUMI_BACKEND_URL (the git stack's backend) into the data directory, next to its store; set NODEFLEET_API_STACK_BACKEND_URL to keep it elsewhere`,
    );
    return true;
  } finally {
    rmSync(oldDir, { recursive: true, force: true });
  }
}
