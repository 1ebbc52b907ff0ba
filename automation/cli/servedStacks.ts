/**
 * Which stacks a service with several clusters serves (`serve --stack a --stack b`, or a pattern
 * such as `--stack 'prod-*'`): every name given, and every stack file of the project's stacks/
 * folder that a pattern matches. Pure, so the recheck that follows added and removed files is
 * tested apart from the services it starts.
 */
import picomatch from "picomatch";

/** A stack name as Pulumi takes it; a pattern may use `*` and `?` besides. */
const STACK_NAME = /^[A-Za-z0-9_.-]+$/;
const STACK_PATTERN = /^[A-Za-z0-9_.*?-]+$/;
const STACK_FILE = /^Pulumi\.([A-Za-z0-9_.-]+)\.ya?ml$/;

function isStackPattern(arg: string): boolean {
  return arg.includes("*") || arg.includes("?");
}

/** Why a `--stack` argument is refused, naming it and the rule, or undefined when it is a name or a pattern. */
export function stackArgumentProblem(arg: string): string | undefined {
  if (isStackPattern(arg)) {
    return STACK_PATTERN.test(arg)
      ? undefined
      : `--stack ${JSON.stringify(arg)}: a pattern may hold letters, digits, "-", "_", "." and the wildcards "*" and "?"`;
  }
  return STACK_NAME.test(arg) ? undefined : `--stack ${JSON.stringify(arg)}: a stack name holds letters, digits, "-", "_" and "."`;
}

/** Whether the arguments ask for one stack served alone (today's service), rather than a front for several. */
export function servesOneStack(args: readonly string[]): boolean {
  return args.length === 1 && !isStackPattern(args[0]!);
}

/** The stack names of the files in a stacks/ folder (`Pulumi.<name>.yaml`). */
export function stackNamesOfFiles(fileNames: readonly string[]): string[] {
  return fileNames.flatMap((file) => {
    const match = STACK_FILE.exec(file);
    return match ? [match[1]!] : [];
  });
}

/** The stacks to serve: names given (whether or not their file exists: a missing one is reported), and matches of the patterns, sorted. */
export function servedStackNames(args: readonly string[], existing: readonly string[]): string[] {
  const patterns = args.filter(isStackPattern).map((pattern) => picomatch(pattern, { dot: true }));
  const names = new Set(args.filter((arg) => !isStackPattern(arg)));
  for (const name of existing) if (patterns.some((matches) => matches(name))) names.add(name);
  return [...names].sort();
}
