/**
 * nodefleet's own provider plugin (components/provider/) in a Pulumi home's plugin cache, so every
 * run the engine starts loads it whatever the project's Pulumi.yaml says: a launcher at this
 * package's version that starts the plugin from this installation with this Node.js. Written into
 * a temporary folder and renamed, so a concurrent run never sees half a plugin.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { packageVersion } from "../../components/shared/packageVersion";

const PLUGIN_NAME = "nodefleet";

/** The plugin's entry in this installation (dist/components/providerMain.js). */
function providerMainPath(): string {
  return resolve(__dirname, "..", "..", "components", "providerMain.js");
}

function launcherText(): string {
  return `#!/bin/sh\n# nodefleet ${packageVersion(__dirname)}'s provider plugin, installed by nodefleet's engine\nexec "${process.execPath}" "${providerMainPath()}" "$@"\n`;
}

/** Installs the launcher into `<pulumiHome>/plugins` unless an identical one is there; returns its path. */
export function ensureNodefleetPlugin(pulumiHome: string): string {
  const plugins = join(pulumiHome, "plugins");
  const folder = join(plugins, `resource-${PLUGIN_NAME}-v${packageVersion(__dirname)}`);
  const executable = join(folder, `pulumi-resource-${PLUGIN_NAME}`);
  const text = launcherText();
  if (existsSync(executable) && readFileSync(executable, "utf8") === text) return executable;
  mkdirSync(plugins, { recursive: true, mode: 0o700 });
  const staging = mkdtempSync(join(plugins, `.${PLUGIN_NAME}-`));
  writeFileSync(join(staging, `pulumi-resource-${PLUGIN_NAME}`), text, { mode: 0o755 });
  rmSync(folder, { recursive: true, force: true });
  try {
    renameSync(staging, folder);
  } catch (error) {
    // Another process installed it first.
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(executable)) throw error;
  }
  return executable;
}
