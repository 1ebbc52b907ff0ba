/**
 * `nodefleet preview --stack NAME [--stack NAME2 ...] [--markdown FILE] [--json]
 *  [--engine automation|simulated] [--data-dir DIR] [--base-ref REF]`.
 * Progress goes to stderr; stdout gets the Markdown, or exactly one JSON document with --json.
 * Exits 1 when any stack's preview failed (its error is in the Markdown and the JSON).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { AutomationEngine } from "../engine/automationEngine";
import { fleetPlugins, pluginLabel } from "../engine/providerPlugins";
import type { StackEngine } from "../engine/stackEngine";
import { formatPreviewMarkdown } from "../preview/previewMarkdown";
import { type EngineKind, runPreview } from "../preview/runPreview";
import { SIMULATION_BANNER, SimulatedEngine } from "../simulated/simulatedEngine";
import { STACK_CONFIG_NAME, projectRoot } from "../stackConfigFile";

/** Credentials that mean a real cloud is configured; without them the simulated engine is the default. */
const CLOUD_CREDENTIALS = ["HCLOUD_TOKEN", "SCW_SECRET_KEY"] as const;

function defaultEngine(env: NodeJS.ProcessEnv = process.env): EngineKind {
  return CLOUD_CREDENTIALS.some((name) => env[name]) ? "automation" : "simulated";
}

async function createEngine(kind: EngineKind, dataDir: string, scratch: boolean, fleet?: FleetSpec): Promise<StackEngine> {
  // The banner is printed once by the command, not once per engine. A scratch cloud seeded with the
  // base config ignores the NODEFLEET_SIM_* fault knobs: an injected failure there would falsify the "before".
  if (kind === "simulated") return new SimulatedEngine({ dataDir, banner: false, ...(scratch ? { env: {} } : {}) });
  // Fails with how to install the pulumi CLI when it is missing, and names a provider plugin it cannot have.
  const engine = await AutomationEngine.create({ dataDir });
  if (fleet) {
    const resolved = await engine.resolvePlugins(fleetPlugins(fleet));
    process.stderr.write(`nodefleet preview: provider plugins ${resolved.map((r) => `${pluginLabel(r.plugin)} (${r.from})`).join(", ")}\n`);
  }
  return engine;
}

function collect(value: string, previous: string[] = []): string[] {
  if (!STACK_CONFIG_NAME.test(value)) throw new InvalidArgumentError("a stack name may only contain letters, digits, '_', '.' and '-'");
  return previous.includes(value) ? previous : [...previous, value];
}

interface PreviewOptions {
  stack: string[];
  markdown?: string;
  json: boolean;
  engine?: EngineKind;
  dataDir?: string;
  baseRef?: string;
}

export function registerPreviewCommand(program: Command): void {
  program
    .command("preview")
    .description("preview what a change to the stack config or components does to each fleet (nothing is applied), as Markdown or JSON")
    .requiredOption("--stack <name>", "stack name (stacks/Pulumi.<name>.yaml); repeat for several stacks", collect)
    .option("--markdown <file>", "also write the Markdown to this file (the pull request comment)")
    .option("--json", "print one JSON document on stdout instead of Markdown", false)
    .addOption(
      new Option(
        "--engine <kind>",
        "engine: automation (real clouds, needs the pulumi CLI) or simulated; default: automation when HCLOUD_TOKEN or SCW_SECRET_KEY is set",
      ).choices(["automation", "simulated"]),
    )
    .option("--data-dir <dir>", "engine data directory (state, simulated cloud); default $NODEFLEET_DATA_DIR or .nodefleet in the project")
    .option("--base-ref <ref>", "git ref whose stack config is the before (simulated engine: applied to a scratch simulated cloud first)")
    .action(async (options: PreviewOptions) => {
      const root = projectRoot();
      const engine = options.engine ?? defaultEngine();
      if (engine === "simulated") {
        process.stderr.write(`nodefleet preview: ${SIMULATION_BANNER}\n`);
      }
      const report = await runPreview({
        stacks: options.stack,
        engine,
        dataDir: path.resolve(options.dataDir ?? process.env.NODEFLEET_DATA_DIR ?? path.join(root, ".nodefleet")),
        baseRef: options.baseRef,
        root,
        createEngine,
        progress: (line) => process.stderr.write(`${line}\n`),
      });
      const markdown = formatPreviewMarkdown(report);
      if (options.markdown) {
        fs.writeFileSync(options.markdown, markdown);
        process.stderr.write(`nodefleet preview: wrote ${options.markdown} (${markdown.length} characters)\n`);
      }
      process.stdout.write(options.json ? `${JSON.stringify(report, null, 2)}\n` : markdown);
      if (!report.succeeded) process.exitCode = 1;
    });
}
