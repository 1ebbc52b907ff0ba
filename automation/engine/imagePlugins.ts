/**
 * Installs every upstream provider plugin a run can load (`everyProviderPlugin`, each at the version
 * its installed npm SDK pins) into a plugin cache, for a container image to ship and the service to
 * install from with NODEFLEET_PLUGIN_DIR, so it downloads nothing at run time (docs/deploy.md):
 *
 *   PATH=<pulumi CLI's dir>:$PATH node dist/automation/engine/imagePlugins.js <dir>
 *
 * `<dir>` becomes a Pulumi home; its `plugins/` folder is the plugin directory (the plugin cache's
 * layout, `resource-<name>-v<version>/pulumi-resource-<name>`). Exits non-zero naming each plugin
 * that could not be had.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { installProviderPlugins } from "./pluginInstall";
import { everyProviderPlugin, pluginLabel } from "./providerPlugins";
import { findTool } from "./toolchain";

async function main(): Promise<void> {
  const target = process.argv[2];
  if (!target) throw new Error("usage: node dist/automation/engine/imagePlugins.js <dir> (a Pulumi home; plugins go to <dir>/plugins)");
  const home = resolve(target);
  const pulumi = findTool("pulumi");
  if (!pulumi) throw new Error("the pulumi CLI is not on PATH (nor in the toolchain cache)");
  mkdirSync(home, { recursive: true });
  const installed = await installProviderPlugins({
    source: "upstream",
    plugins: everyProviderPlugin(),
    pulumi,
    processEnv: { PATH: process.env.PATH ?? "", PULUMI_HOME: home, PULUMI_SKIP_UPDATE_CHECK: "true" },
  });
  for (const { plugin, from } of installed) process.stdout.write(`${pluginLabel(plugin)} (${plugin.sdk}): ${from}\n`);
  process.stdout.write(`plugin directory: ${join(home, "plugins")}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`imagePlugins: ${(error as Error).message}\n`);
  process.exit(1);
});
