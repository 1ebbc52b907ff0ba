/**
 * The `nodefleet` command line. Each command lives in its own file and registers itself here.
 * With --json a command prints exactly one JSON document on stdout; progress and logs go to stderr.
 */
import { Command, CommanderError } from "commander";
import { FleetSpecError } from "../../components/fleet/fleetSpec";
import { registerPreviewCommand } from "./previewCommand";
import { registerRenderCommand } from "./renderCommand";
import { registerLocalCommand } from "./localCommand";
import { registerNodesCommand } from "./nodesCommand";
import { registerInitCommand } from "./initCommand";
import { registerServeCommand } from "./serveCommand";
import { registerRecoverCommand } from "./recoverCommand";
import { registerCompletionCommand } from "./completion/completionCommand";
import { packageVersion } from "../../components/shared/packageVersion";
import { errorMessage } from "../../components/shared/errorMessage";

function buildProgram(): Command {
  const program = new Command("nodefleet")
    .description("Kubernetes worker fleets on Hetzner Cloud and Scaleway Elastic Metal, as Pulumi components")
    .version(packageVersion(), "-V, --version", "print nodefleet's version")
    .showHelpAfterError()
    .exitOverride();
  registerRenderCommand(program);
  registerPreviewCommand(program);
  registerServeCommand(program);
  registerRecoverCommand(program);
  registerNodesCommand(program);
  registerLocalCommand(program);
  registerInitCommand(program);
  // Last: it completes the commands registered above.
  registerCompletionCommand(program);
  return program;
}

/** Errors carry their own explanation; print it without a stack trace (no secrets are in our messages). */
function reportError(error: unknown): number {
  if (error instanceof CommanderError) return error.exitCode;
  if (error instanceof FleetSpecError) {
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
  const message = errorMessage(error);
  process.stderr.write(`nodefleet: ${message}\n`);
  if (process.env.NODEFLEET_DEBUG && error instanceof Error && error.stack) process.stderr.write(`${error.stack}\n`);
  return 1;
}

async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    process.exitCode = reportError(error);
  }
}

void main(process.argv);
