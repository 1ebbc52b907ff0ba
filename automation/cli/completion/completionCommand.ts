/**
 * `nodefleet completion bash|zsh`: prints the shell completion script for the whole CLI, generated
 * at run time from the program's own commands and options (commandTree.ts), so it cannot fall
 * behind the CLI it completes.
 */
import { Argument, type Command } from "commander";
import { bashCompletion } from "./bashCompletion";
import { completionTree } from "./commandTree";
import { zshCompletion } from "./zshCompletion";

const SCRIPTS = { bash: bashCompletion, zsh: zshCompletion } as const;
type Shell = keyof typeof SCRIPTS;

function completionScript(program: Command, shell: Shell): string {
  return SCRIPTS[shell](completionTree(program));
}

export function registerCompletionCommand(program: Command): void {
  program
    .command("completion")
    .description("print the shell completion script (bash: source <(nodefleet completion bash))")
    .addArgument(new Argument("<shell>", "bash or zsh").choices(Object.keys(SCRIPTS)))
    .action((shell: Shell) => {
      process.stdout.write(completionScript(program, shell));
    });
}
