/** `nodefleet render --stack NAME [--json] [--show-secrets]`. */
import type { Command } from "commander";
import { formatRender, renderStack } from "../render/renderStack";

export function registerRenderCommand(program: Command): void {
  program
    .command("render")
    .description("show every resource a stack declares, computed offline under Pulumi mocks, with each node's user data")
    .requiredOption("--stack <name>", "stack name (stacks/Pulumi.<name>.yaml)")
    .option("--json", "print one JSON document on stdout", false)
    .option("--show-secrets", "show tokens and other secrets instead of masking them", false)
    .action(async (options: { stack: string; json: boolean; showSecrets: boolean }) => {
      const result = await renderStack(options.stack, { showSecrets: options.showSecrets });
      process.stdout.write(options.json ? `${JSON.stringify(result, null, 2)}\n` : formatRender(result));
    });
}
