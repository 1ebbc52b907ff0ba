/**
 * A throw-away Pulumi project with `stackConfigDir: stacks`, a file backend and passphrase secrets,
 * for tests that set secure config through the real CLI and read it back through the engine.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { AutomationEngine } from "../../automation/engine/automationEngine";
import { requirePulumiCommand } from "../../automation/engine/pulumiCli";
import { pulumiProcessEnv } from "../../automation/engine/toolchain";
import type { StackDefinition } from "../../automation/engine/stackEngine";
import { gitStackProgram } from "../../automation/gitStackProgram";

const PASSPHRASE = "test-passphrase";

export interface PassphraseProject {
  readonly project: string;
  readonly engine: AutomationEngine;
  readonly def: StackDefinition & { readonly projectDir: string };
  /** Sets a config value through the real CLI (`--secret` when asked, `--path` keys). */
  setConfig(key: string, value: string, secret: boolean): Promise<void>;
}

/** Creates the project in `project` (an empty directory) with `stacks/Pulumi.<stackName>.yaml` holding `stackFile`. */
export async function passphraseProject(project: string, stackName: string, stackFile = ""): Promise<PassphraseProject> {
  fs.mkdirSync(path.join(project, "stacks"));
  fs.mkdirSync(path.join(project, "state"));
  fs.writeFileSync(path.join(project, "Pulumi.yaml"), "name: nodefleet\nruntime: nodejs\nstackConfigDir: stacks\n");
  if (stackFile) fs.writeFileSync(path.join(project, "stacks", `Pulumi.${stackName}.yaml`), stackFile);
  const backend = `file://${path.join(project, "state")}`;
  const engine = await AutomationEngine.create({
    dataDir: path.join(project, "data"),
    env: { ...process.env, PULUMI_BACKEND_URL: backend, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE },
  });
  const def = { stackName, program: gitStackProgram({ allowMissingKubeconfig: true }), config: {}, projectDir: project };
  await engine.readStackConfig(def); // creates the stack and its encryption salt
  const workspace = await LocalWorkspace.create({
    workDir: project,
    pulumiCommand: await requirePulumiCommand(),
    envVars: { ...pulumiProcessEnv(path.join(project, "data")), PULUMI_BACKEND_URL: backend, PULUMI_CONFIG_PASSPHRASE: PASSPHRASE },
  });
  return { project, engine, def, setConfig: (key, value, secret) => workspace.setConfig(stackName, key, { value, secret }, true) };
}
