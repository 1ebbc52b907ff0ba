/**
 * The automation engine drives the `pulumi` CLI, found by the toolchain rule (PATH first, else the
 * cache `npm run toolchain` fills); when it is missing, or its version is not supported, the error
 * says how to get a right one (the Automation API's own message only says the command failed).
 */
import { readFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import semver from "semver";
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

/**
 * The CLI versions nodefleet supports: the 3.x line from the version of the @pulumi/pulumi SDK it
 * runs (an older CLI may lack what that SDK's Automation API and language runtime ask of it).
 */
export function supportedCliRange(): string {
  const sdk = (JSON.parse(readFileSync(require.resolve("@pulumi/pulumi/package.json"), "utf8")) as { version: string }).version;
  return `>=${sdk} <${semver.major(sdk) + 1}.0.0`;
}

export class PulumiCliVersionError extends Error {
  override readonly name = "PulumiCliVersionError";
  constructor(path: string, found: string) {
    super(
      `the pulumi CLI at ${path} is ${found}; nodefleet supports ${supportedCliRange()}: install a supported CLI (\`npm run toolchain\` builds the SDK's own version) and put it first on PATH`,
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
  let command: PulumiCommand;
  try {
    // PulumiCommand looks for <root>/bin/pulumi; both PATH installs and the toolchain cache have that shape.
    command = await PulumiCommand.get(basename(dirname(path)) === "bin" ? { root: dirname(dirname(path)) } : {});
  } catch (error) {
    throw new PulumiCliMissingError((error as Error).message.split("\n")[0]);
  }
  const version = command.version?.version;
  if (!version || !semver.satisfies(version, supportedCliRange(), { includePrerelease: true }))
    throw new PulumiCliVersionError(path, version ? `v${version}` : "of unknown version");
  return command;
}
