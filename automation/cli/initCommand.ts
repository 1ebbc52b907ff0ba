/**
 * `nodefleet init [dir]`: a new Pulumi project of a team's own that uses the installed nodefleet
 * package (see automation/init/projectTemplate.ts for the files). Writes nothing when any of its
 * files already exists.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import type { Command } from "commander";
import { projectTemplate } from "../init/projectTemplate";

/** This package's root (holding package.json), from dist/automation/cli. */
const PACKAGE_ROOT = resolve(__dirname, "..", "..", "..");

interface InitOptions {
  readonly stack: string;
  readonly name?: string;
}

export function registerInitCommand(program: Command): void {
  program
    .command("init")
    .description("create a Pulumi project of your own that declares a fleet with nodefleet")
    .argument("[dir]", "the project directory (created when missing)", ".")
    .option("--stack <name>", "the first stack (stacks/Pulumi.<name>.yaml)", "dev")
    .option("--name <name>", "the Pulumi project name (default: the directory's name)")
    .action((dir: string, opts: InitOptions) => {
      const target = resolve(dir);
      const hasPackageJson = existsSync(join(target, "package.json"));
      const version = (JSON.parse(readFileSync(join(PACKAGE_ROOT, "package.json"), "utf8")) as { version: string }).version;
      const files = projectTemplate({
        projectName: opts.name ?? basename(target),
        stackName: opts.stack,
        exampleStack: readFileSync(join(PACKAGE_ROOT, "stacks", "Pulumi.example.yaml"), "utf8"),
        previewWorkflow: readFileSync(join(PACKAGE_ROOT, ".github", "workflows", "preview.yml"), "utf8"),
        ...(hasPackageJson ? {} : { nodefleetDependency: `^${version}` }),
      });
      const existing = Object.keys(files).filter((file) => existsSync(join(target, file)));
      if (existing.length > 0)
        throw new Error(
          `init: ${existing.join(", ")} already exist${existing.length === 1 ? "s" : ""} in ${target}; nothing was written (choose an empty directory)`,
        );
      for (const [file, text] of Object.entries(files)) {
        mkdirSync(dirname(join(target, file)), { recursive: true });
        writeFileSync(join(target, file), text);
      }
      const where = relative(process.cwd(), target) || ".";
      process.stdout.write(
        [
          `nodefleet init: wrote ${Object.keys(files).join(", ")} in ${where}`,
          "next:",
          ...(where === "." ? [] : [`  cd ${where}`]),
          ...(hasPackageJson ? [] : ["  npm install"]),
          `  npx nodefleet render --stack ${opts.stack}       # what the stack declares, offline`,
          `  pulumi stack init ${opts.stack} && pulumi preview --stack ${opts.stack}`,
          "",
        ].join("\n"),
      );
    });
}
