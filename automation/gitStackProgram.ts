/**
 * The program of the git-owned stacks (stacks/fleetProgram.ts, compiled), as a reference that
 * `render`, the engines and the scaling API can run in-process or in a child process.
 */
import * as path from "node:path";
import type { ProgramReference } from "./engine/stackEngine";

/**
 * `previousNodes` and `previousNetwork`: the stack's last `nodes` and `network` outputs, so that
 * static pools roll changes step by step and a changed network range is refused (stacks/fleetProgram.ts).
 */
export function gitStackProgram(options: {
  allowMissingKubeconfig: boolean;
  previousNodes?: unknown;
  previousNetwork?: unknown;
}): ProgramReference {
  return {
    module: path.resolve(__dirname, "..", "stacks", "fleetProgram.js"),
    args: {
      allowMissingKubeconfig: options.allowMissingKubeconfig,
      ...(options.previousNodes !== undefined ? { previousNodes: options.previousNodes } : {}),
      ...(options.previousNetwork !== undefined ? { previousNetwork: options.previousNetwork } : {}),
    },
  };
}

/** Loads a program module (once: Node caches it); the module must export `runProgram(args)`. */
export function loadProgram(program: ProgramReference): (args: unknown) => Promise<unknown> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runProgram } = require(program.module) as { runProgram?: (args: unknown) => Promise<unknown> };
  if (typeof runProgram !== "function") {
    throw new Error(`${program.module} does not export runProgram(args)`);
  }
  return runProgram;
}

/** Loads a program module and runs it. */
export async function runProgramReference(program: ProgramReference): Promise<unknown> {
  return loadProgram(program)(program.args);
}
