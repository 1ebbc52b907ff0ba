/**
 * `nodefleet recover --stack NAME [--data-dir DIR] [--json]`: the automation engine's crash
 * recovery (engine/crashRecovery.ts) on a git stack, for a person whose `pulumi up --stack NAME`
 * was killed. The CLI's next `pulumi up` would only warn about the pending creates and order every
 * interrupted server again (Scaleway takes a second server of the same name); this removes the
 * killed CLI's lock, adopts each server found by name and ownership labels or tags into the state
 * and refreshes, so the next `pulumi up` finishes them (docs/operations.md). Run it in the shell
 * the `pulumi up` ran in: same backend, passphrase and cloud credentials.
 */
import * as path from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { AutomationEngine } from "../engine/automationEngine";
import type { PendingCreateAction, RecoveryReport } from "../engine/crashRecovery";
import { gitStackProgram } from "../gitStackProgram";
import { STACK_CONFIG_NAME, projectRoot } from "../stackConfigFile";

function stackName(value: string): string {
  if (!STACK_CONFIG_NAME.test(value)) throw new InvalidArgumentError("a stack name may only contain letters, digits, '_', '.' and '-'");
  return value;
}

/** One line per pending operation: what recovery did with it. */
function recoveryLines(stack: string, report: RecoveryReport): string[] {
  const describe = (a: PendingCreateAction) =>
    a.action === "clear"
      ? `cleared ${a.urn}: ${a.reason}`
      : `${a.action === "import" ? "adopted" : "deleted"} server ${a.server.name} (${a.server.id}) for ${a.urn}`;
  const lines = [
    ...(report.removedStaleLocks > 0 ? [`removed ${report.removedStaleLocks} lock(s) of a pulumi process that no longer runs`] : []),
    ...report.actions.map(describe),
  ];
  return lines.length > 0
    ? [...lines, `stack ${stack} recovered: run \`pulumi up --stack ${stack}\` to finish`]
    : [`stack ${stack}: nothing to recover`];
}

export function registerRecoverCommand(program: Command): void {
  program
    .command("recover")
    .description(
      "after a killed `pulumi up`: remove its stale lock, adopt the servers it ordered into the stack's state (found by name and ownership tags), refresh",
    )
    .requiredOption("--stack <name>", "stack name (stacks/Pulumi.<name>.yaml), in the backend PULUMI_BACKEND_URL names", stackName)
    .option("--data-dir <dir>", "engine data directory (its Pulumi home); default $NODEFLEET_DATA_DIR or .nodefleet in the project")
    .option("--json", "print the report as one JSON document on stdout", false)
    .action(async (options: { stack: string; dataDir?: string; json: boolean }) => {
      const root = projectRoot();
      const dataDir = path.resolve(options.dataDir ?? process.env.NODEFLEET_DATA_DIR ?? path.join(root, ".nodefleet"));
      const engine = await AutomationEngine.create({ dataDir });
      const report = await engine.recover({
        stackName: options.stack,
        program: gitStackProgram({ allowMissingKubeconfig: false }),
        config: {},
        projectDir: root,
      });
      if (options.json) process.stdout.write(`${JSON.stringify({ stack: options.stack, ...report })}\n`);
      else process.stdout.write(`${recoveryLines(options.stack, report).join("\n")}\n`);
    });
}
