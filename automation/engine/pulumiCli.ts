/**
 * The automation engine drives the `pulumi` CLI, found by the toolchain rule (PATH first, else the
 * cache `npm run toolchain` fills); when it is missing the error says how to get it (the Automation
 * API's own message only says the command failed).
 */
import { basename, dirname } from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import { TOOLCHAIN_HINT, findTool } from "./toolchain";

const PULUMI_INSTALL_HINT = `${TOOLCHAIN_HINT}, or install the Pulumi CLI and put \`pulumi\` on PATH`;

export class PulumiCliMissingError extends Error {
  override readonly name = "PulumiCliMissingError";
  constructor(detail?: string) {
    super(
      `the automation engine needs the pulumi CLI, which was not found${detail ? ` (${detail})` : ""}: ${PULUMI_INSTALL_HINT}. Without it, use --engine simulated.`,
    );
  }
}

/** The absolute path of the `pulumi` the engine would use (no process spawned). */
function findPulumiCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return findTool(process.platform === "win32" ? "pulumi.exe" : "pulumi", env);
}

/** The CLI the Automation API will use; throws PulumiCliMissingError naming the fix. */
export async function requirePulumiCommand(env: NodeJS.ProcessEnv = process.env): Promise<PulumiCommand> {
  const path = findPulumiCli(env);
  if (!path) throw new PulumiCliMissingError("not on PATH, and no toolchain build");
  try {
    // PulumiCommand looks for <root>/bin/pulumi; both PATH installs and the toolchain cache have that shape.
    return await PulumiCommand.get(basename(dirname(path)) === "bin" ? { root: dirname(dirname(path)) } : {});
  } catch (error) {
    throw new PulumiCliMissingError((error as Error).message.split("\n")[0]);
  }
}
