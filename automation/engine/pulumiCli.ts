/**
 * The automation engine drives the `pulumi` CLI; when it is missing the error says how to get it
 * (the Automation API's own message only says the command failed).
 */
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";

export const PULUMI_INSTALL_HINT =
  "install the Pulumi CLI with `curl -fsSL https://get.pulumi.com | sh` (or see https://www.pulumi.com/docs/iac/download-install/) and make sure `pulumi` is on PATH";

export class PulumiCliMissingError extends Error {
  override readonly name = "PulumiCliMissingError";
  constructor(detail?: string) {
    super(`the automation engine needs the pulumi CLI, which was not found${detail ? ` (${detail})` : ""}: ${PULUMI_INSTALL_HINT}. Without it, use --engine simulated.`);
  }
}

/** The absolute path of an executable `pulumi` on PATH, if any (no process spawned). */
export function findPulumiOnPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, process.platform === "win32" ? "pulumi.exe" : "pulumi");
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The CLI the Automation API will use; throws PulumiCliMissingError naming the fix. */
export async function requirePulumiCommand(env: NodeJS.ProcessEnv = process.env): Promise<PulumiCommand> {
  if (!findPulumiOnPath(env)) throw new PulumiCliMissingError("not on PATH");
  try {
    return await PulumiCommand.get();
  } catch (error) {
    throw new PulumiCliMissingError((error as Error).message.split("\n")[0]);
  }
}
