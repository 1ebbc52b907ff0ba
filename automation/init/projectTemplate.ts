/**
 * The files `nodefleet init` writes for a team's own Pulumi project: the project file, a program of
 * two lines that exports nodefleet's program, a stack config to start from (the package's example,
 * with its Hetzner Cloud pools only), the pull request preview workflow and a .gitignore. Pure: the
 * caller reads the package's example and workflow and writes the result.
 */
import { parse, stringify } from "yaml";

export interface ProjectTemplateInput {
  /** The Pulumi project name (Pulumi.yaml `name`). */
  readonly projectName: string;
  /** The first stack, whose config goes to `stacks/Pulumi.<stack>.yaml`. */
  readonly stackName: string;
  /** The text of this package's `stacks/Pulumi.example.yaml`. */
  readonly exampleStack: string;
  /** The text of this package's `.github/workflows/preview.yml`. */
  readonly previewWorkflow: string;
  /** The version range of nodefleet a created package.json depends on; no package.json when absent. */
  readonly nodefleetDependency?: string;
}

/** Pulumi project and stack names: what `pulumi stack init` and the stack file name accept. */
const PROJECT_NAME = /^[A-Za-z0-9_.-]{1,100}$/;

export class ProjectTemplateError extends Error {
  override readonly name = "ProjectTemplateError";
}

function stackConfig(input: ProjectTemplateInput): string {
  const document = parse(input.exampleStack) as { config: Record<string, unknown> };
  const config = { ...document.config };
  const cluster = config["nodefleet:cluster"] as Record<string, unknown>;
  config["nodefleet:cluster"] = { ...cluster, id: input.stackName };
  // Hetzner Cloud only: the Elastic Metal and Robot pools need accounts of their own (see docs/).
  config["nodefleet:pools"] = (config["nodefleet:pools"] as Array<{ provider?: string }>).filter((pool) => pool.provider === "hcloud");
  const header = [
    `# The ${input.stackName} stack of this fleet, from nodefleet's example: replace the cluster's apiServer,`,
    "# caCertificate and controlPlaneAddresses with your control plane's, then add its kubeconfig as a secret:",
    `#   pulumi config set --secret --path 'nodefleet:cluster.kubeconfig' "$(cat admin.kubeconfig)" --stack ${input.stackName}`,
    "# Every key is described in nodefleet's docs/fleet-spec.md.",
    "",
  ].join("\n");
  return header + stringify({ config });
}

/** Relative path to file text. Throws ProjectTemplateError naming the input and the rule. */
export function projectTemplate(input: ProjectTemplateInput): Record<string, string> {
  if (!PROJECT_NAME.test(input.projectName))
    throw new ProjectTemplateError(`--name ${JSON.stringify(input.projectName)}: a project name is 1-100 letters, digits, '_', '.' or '-'`);
  if (!PROJECT_NAME.test(input.stackName))
    throw new ProjectTemplateError(`--stack ${JSON.stringify(input.stackName)}: a stack name is 1-100 letters, digits, '_', '.' or '-'`);
  const files: Record<string, string> = {
    "Pulumi.yaml": stringify({
      name: input.projectName,
      description: "Kubernetes worker fleet declared with nodefleet",
      runtime: { name: "nodejs", options: { typescript: true } },
      main: "index.ts",
      stackConfigDir: "stacks",
      // nodefleet's own provider plugin ships in the package (docs/own-project.md).
      plugins: { providers: [{ name: "nodefleet", path: "./node_modules/nodefleet/bin" }] },
    }),
    "index.ts": [
      "// The fleet of this project: nodefleet's program declares it from stacks/Pulumi.<stack>.yaml.",
      'import { fleetStackProgram } from "nodefleet";',
      "",
      "export = fleetStackProgram;",
      "",
    ].join("\n"),
    "tsconfig.json": `${JSON.stringify(
      {
        compilerOptions: {
          target: "ES2022",
          module: "commonjs",
          moduleResolution: "node",
          strict: true,
          esModuleInterop: true,
          skipLibCheck: true,
          noEmit: true,
        },
        files: ["index.ts"],
      },
      null,
      2,
    )}\n`,
    [`stacks/Pulumi.${input.stackName}.yaml`]: stackConfig(input),
    ".github/workflows/preview.yml": input.previewWorkflow.replace(/^(\s*PREVIEW_STACKS:).*$/m, `$1 ${input.stackName}`),
    ".gitignore": [
      "node_modules/",
      ".nodefleet/",
      "# Written by `nodefleet local up` for one machine.",
      "stacks/Pulumi.local.yaml",
      "",
    ].join("\n"),
  };
  if (input.nodefleetDependency) {
    files["package.json"] =
      `${JSON.stringify({ name: input.projectName.toLowerCase(), private: true, dependencies: { nodefleet: input.nodefleetDependency } }, null, 2)}\n`;
  }
  return files;
}
