/**
 * The commands, options and argument choices of a commander program, as plain data for the shell
 * completion scripts. Read through commander's Help (what `--help` shows, including the implicit
 * `help` command and `-h, --help`), so a command or option added anywhere in the CLI is completed
 * without anyone editing a list.
 */
import type { Command, Option } from "commander";

export interface CompletionOption {
  /** `-o` and `--output`, or just `--json`. */
  readonly flags: readonly string[];
  readonly takesValue: boolean;
  /** The values the option accepts, when commander knows them (`.choices()`). */
  readonly choices: readonly string[];
  readonly description: string;
}

export interface CompletionCommand {
  readonly name: string;
  /** The command words after the program's name: [] for the program, ["nodes", "list"] for `nodes list`. */
  readonly path: readonly string[];
  readonly description: string;
  readonly options: readonly CompletionOption[];
  readonly subcommands: readonly CompletionCommand[];
  /** The values of positional arguments that have choices (`completion bash|zsh`). */
  readonly argumentChoices: readonly string[];
}

/**
 * What the scripts put between their quotes unescaped: a word outside this set is refused when the
 * script is generated (and so by the completion tests), instead of breaking a user's shell.
 */
const SHELL_SAFE_WORD = /^[A-Za-z0-9_.@%+=,/-]+$/;

function shellSafe(word: string, what: string): string {
  if (!SHELL_SAFE_WORD.test(word))
    throw new Error(`${what} ${JSON.stringify(word)} cannot be completed: use letters, digits and _.@%+=,/- only`);
  return word;
}

function optionOf(option: Option): CompletionOption {
  const flags = [option.short, option.long].filter((flag): flag is string => flag !== undefined).map((flag) => shellSafe(flag, "option"));
  const choices = (option.argChoices ?? []).map((choice) => shellSafe(choice, `choice of ${option.long ?? option.short ?? ""}`));
  return { flags, takesValue: option.required || option.optional, choices, description: option.description };
}

function commandOf(command: Command, path: readonly string[]): CompletionCommand {
  const help = command.createHelp();
  return {
    name: path[path.length - 1] ?? command.name(),
    path,
    description: command.description(),
    options: help.visibleOptions(command).map(optionOf),
    subcommands: help.visibleCommands(command).map((sub) => commandOf(sub, [...path, shellSafe(sub.name(), "command")])),
    argumentChoices: command.registeredArguments.flatMap((argument) =>
      (argument.argChoices ?? []).map((choice) => shellSafe(choice, "argument choice")),
    ),
  };
}

export function completionTree(program: Command): CompletionCommand {
  return commandOf(program, []);
}

/** The program and every command under it, parents first. */
export function everyCommand(root: CompletionCommand): CompletionCommand[] {
  return [root, ...root.subcommands.flatMap(everyCommand)];
}

/**
 * The key the scripts match a command by: each word preceded by a space (" nodes list"), the
 * program itself "". It is what `"$command_path $word"` builds as the scripts walk the typed words.
 */
export function pathKey(path: readonly string[]): string {
  return path.map((word) => ` ${word}`).join("");
}
