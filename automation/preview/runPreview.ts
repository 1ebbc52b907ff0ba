/**
 * Runs `nodefleet preview` for one or more stacks: reads each stack's config from the working
 * tree, establishes the "before" and asks the engine for a preview (nothing is applied to the
 * stack itself), and turns the result into a PreviewReport.
 *
 * The before: with the automation engine, the stack's real state. With the simulated engine and
 * `baseRef`, the base ref's config is first applied (`up`) to a scratch simulated cloud in a
 * temporary data directory, so the preview shows exactly what the pull request changes; without
 * `baseRef`, whatever the data directory's simulated cloud holds.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { type FleetSpec, parseFleetSpec } from "../../components/fleet/fleetSpec";
import type { ResourceStep, StackDefinition, StackEngine } from "../engine/stackEngine";
import { gitStackProgram } from "../gitStackProgram";
import type { PreviousRunOutputs } from "../../stacks/fleetProgram";
import { type StackConfigFile, configValues, parseStackConfig, readStackConfigFile, stackConfigPath } from "../stackConfigFile";
import { configChangesByPool, fleetLayout } from "./fleetLayout";
import { type PreviewReport, type StackPreview, buildStackPreview, previewReport } from "./stackPreview";
import { errorMessage } from "../../components/shared/errorMessage";

export type EngineKind = "automation" | "simulated";

export interface RunPreviewOptions {
  readonly stacks: readonly string[];
  readonly engine: EngineKind;
  /** The data directory of the engine (state, simulated cloud). */
  readonly dataDir: string;
  /** Git ref whose `stacks/Pulumi.<stack>.yaml` is the before. */
  readonly baseRef?: string;
  /** Project root (holding Pulumi.yaml and stacks/). */
  readonly root: string;
  /** Builds an engine on a data directory; `scratch` for the temporary cloud seeded with the base config. */
  /** `fleet`: the previewed stack's fleet, whose provider plugins the engine must be able to load. */
  readonly createEngine: (kind: EngineKind, dataDir: string, scratch: boolean, fleet?: FleetSpec) => StackEngine | Promise<StackEngine>;
  /** Progress lines (stderr in the CLI). */
  readonly progress?: (line: string) => void;
}

/** Environment variables whose values are credentials: masked wherever they could surface. */
export const SECRET_ENV_VARS = [
  "HCLOUD_TOKEN",
  "SCW_ACCESS_KEY",
  "SCW_SECRET_KEY",
  "PULUMI_CONFIG_PASSPHRASE",
  "PULUMI_ACCESS_TOKEN",
  "HROBOT_PASSWORD",
  "NODEFLEET_SSH_PRIVATE_KEY",
] as const;

function projectName(root: string): string {
  const document = parse(fs.readFileSync(path.join(root, "Pulumi.yaml"), "utf8")) as { name?: unknown } | null;
  return typeof document?.name === "string" ? document.name : path.basename(root);
}

/** The stack config file at a git ref; undefined when the stack does not exist there (a new stack). */
function stackConfigAtRef(root: string, ref: string, stack: string): string | undefined {
  const relative = path.relative(root, stackConfigPath(stack, root)).split(path.sep).join("/");
  try {
    execFileSync("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], { cwd: root, stdio: ["ignore", "ignore", "ignore"] });
  } catch {
    throw new Error(`--base-ref ${ref}: not a commit in this repository (fetch it first, e.g. actions/checkout with fetch-depth: 0)`);
  }
  try {
    return execFileSync("git", ["show", `${ref}:${relative}`], { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return undefined;
  }
}

function specOf(file: StackConfigFile | undefined): FleetSpec | undefined {
  if (!file) return undefined;
  try {
    return parseFleetSpec(configValues(file.config));
  } catch {
    return undefined; // the engine reports an invalid config itself, with every problem listed
  }
}

function knownSecrets(): string[] {
  return SECRET_ENV_VARS.map((name) => process.env[name]).filter((v): v is string => typeof v === "string" && v.length > 0);
}

function definition(stack: string, file: StackConfigFile, engine: EngineKind, previous: PreviousRunOutputs = {}): StackDefinition {
  return {
    stackName: stack,
    // Simulation runs without a kubeconfig; a real preview needs it to plan the token Secrets.
    // The previous nodes let static pools show this run's rollout step instead of replacing every
    // member; the previous network, that a changed range is refused.
    program: gitStackProgram({
      allowMissingKubeconfig: engine === "simulated",
      ...(previous.nodes !== undefined ? { previousNodes: previous.nodes } : {}),
      ...(previous.network !== undefined ? { previousNetwork: previous.network } : {}),
    }),
    config: file.config,
    // A real preview reads the committed stack file itself, so its secure values decrypt.
    ...(engine === "automation" ? { projectDir: path.dirname(path.dirname(file.path)) } : {}),
  };
}

/** The stack's last `nodes` and `network` outputs; none for a stack never applied (or whose outputs cannot be read). */
async function previousOutputsOf(engine: StackEngine, def: StackDefinition): Promise<PreviousRunOutputs> {
  try {
    const outputs = await engine.outputs(def);
    return {
      ...(Array.isArray(outputs.nodes) ? { nodes: outputs.nodes } : {}),
      ...(outputs.network !== undefined ? { network: outputs.network } : {}),
    };
  } catch {
    return {};
  }
}

async function previewStack(stack: string, options: RunPreviewOptions, project: string): Promise<StackPreview> {
  const say = options.progress ?? (() => undefined);
  const context = { project, stack, engine: options.engine, baseRef: options.baseRef, knownSecrets: knownSecrets() };
  let scratchDir: string | undefined;
  try {
    const after = readStackConfigFile(stack, options.root);
    const afterSpec = specOf(after);
    let beforeSpec: FleetSpec | undefined;
    let beforeFile: StackConfigFile | undefined;
    if (options.baseRef) {
      const text = stackConfigAtRef(options.root, options.baseRef, stack);
      beforeFile = text === undefined ? undefined : parseStackConfig(stack, stackConfigPath(stack, options.root), text);
      beforeSpec = specOf(beforeFile);
      say(
        `[${stack}] before: ${text === undefined ? `no stacks/Pulumi.${stack}.yaml at ${options.baseRef} (a new stack)` : `the config at ${options.baseRef}`}`,
      );
    }
    const fullContext = {
      ...context,
      after: afterSpec && fleetLayout(afterSpec),
      before: beforeSpec && fleetLayout(beforeSpec),
      configChanges: beforeSpec && afterSpec ? configChangesByPool(beforeSpec, afterSpec) : undefined,
    };

    let engine: StackEngine;
    if (options.engine === "simulated" && options.baseRef) {
      scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), "nodefleet-preview-"));
      engine = await options.createEngine("simulated", scratchDir, true);
      if (beforeFile) {
        say(`[${stack}] applying the config at ${options.baseRef} to a scratch simulated cloud`);
        const base = await engine.up(definition(stack, beforeFile, "simulated"));
        if (!base.succeeded) throw new Error(`applying the config at ${options.baseRef} to the scratch simulated cloud failed`);
      }
    } else {
      engine = await options.createEngine(options.engine, options.dataDir, false, afterSpec);
    }
    say(
      `[${stack}] preview with the ${options.engine} engine${options.engine === "simulated" ? " (SIMULATED: no cloud is contacted)" : ""}`,
    );
    const previous = await previousOutputsOf(engine, definition(stack, after, options.engine));
    const result = await engine.preview(definition(stack, after, options.engine, previous), {
      onStep: (step: ResourceStep, count: number) =>
        say(`[${stack}] ${String(count).padStart(4)} ${step.op.padEnd(7)} ${step.type} ${step.name}`),
    });
    say(
      `[${stack}] ${result.succeeded ? "done" : "failed"}: ${Object.entries(result.summary)
        .map(([op, n]) => `${n} ${op}`)
        .join(", ")}`,
    );
    return buildStackPreview(fullContext, { result });
  } catch (error) {
    const failed = buildStackPreview(context, { error: errorMessage(error) });
    say(`[${stack}] preview failed: ${failed.error}`);
    return failed;
  } finally {
    if (scratchDir) fs.rmSync(scratchDir, { recursive: true, force: true });
  }
}

/** Previews every stack in turn (one failing stack does not stop the others). */
export async function runPreview(options: RunPreviewOptions): Promise<PreviewReport> {
  const project = projectName(options.root);
  const stacks: StackPreview[] = [];
  for (const stack of options.stacks) stacks.push(await previewStack(stack, options, project));
  return previewReport(stacks);
}
