/**
 * Which provider plugins the engine's runs use (docs/engines.md, "Which plugins a run uses"):
 * upstream's by default, each at the exact version its installed npm SDK pins, installed into the
 * engine's Pulumi home before the first run; nodefleet's own doubles (the toolchain's, on PATH) only
 * when NODEFLEET_PLUGINS=toolchain says so, as the tests and the local cloud do.
 */
import { accessSync, constants, existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { FleetSpec } from "../../components/fleet/fleetSpec";

export type PluginSource = "upstream" | "toolchain";

const PLUGIN_SOURCES: readonly PluginSource[] = ["upstream", "toolchain"];

/** NODEFLEET_PLUGINS, checked: unset means upstream. */
export function pluginSource(env: NodeJS.ProcessEnv = process.env): PluginSource {
  const value = env.NODEFLEET_PLUGINS;
  if (value === undefined || value === "") return "upstream";
  if ((PLUGIN_SOURCES as readonly string[]).includes(value)) return value as PluginSource;
  throw new Error(`NODEFLEET_PLUGINS: must be one of ${PLUGIN_SOURCES.join(", ")} (got ${JSON.stringify(value)})`);
}

/** A resource plugin as the npm SDK that drives it pins it. */
export interface ProviderPlugin {
  readonly name: string;
  readonly version: string;
  /** The npm package the version comes from. */
  readonly sdk: string;
  /** Where Pulumi downloads it from when not from get.pulumi.com (`github://api.github.com/pulumiverse`). */
  readonly server?: string;
}

/** The SDKs whose plugins the fleet's programs can load. */
const SDKS = {
  hcloud: "@pulumi/hcloud",
  kubernetes: "@pulumi/kubernetes",
  random: "@pulumi/random",
  time: "@pulumiverse/time",
  command: "@pulumi/command",
  scaleway: "@pulumiverse/scaleway",
} as const;

type SdkName = keyof typeof SDKS;

/** The plugin an installed SDK pins: its package.json's `pulumi` block, the package version where that has none (as Pulumi reads it). */
export function sdkPlugin(sdk: string): ProviderPlugin {
  const manifest = JSON.parse(readFileSync(require.resolve(`${sdk}/package.json`), "utf8")) as {
    version: string;
    pulumi?: { name?: string; version?: string; server?: string };
  };
  const name = manifest.pulumi?.name;
  if (!name) throw new Error(`${sdk}: package.json has no pulumi.name, so its plugin is unknown`);
  const version = (manifest.pulumi?.version ?? manifest.version).replace(/^v/, "");
  return { name, version, sdk, ...(manifest.pulumi?.server ? { server: manifest.pulumi.server } : {}) };
}

function pluginsOf(names: readonly SdkName[]): ProviderPlugin[] {
  return names.map((name) => sdkPlugin(SDKS[name]));
}

/** The scaling API's stack: Hetzner Cloud servers, their bootstrap tokens (Secret, random, time). */
export function apiStackPlugins(): ProviderPlugin[] {
  return pluginsOf(["hcloud", "kubernetes", "random", "time"]);
}

/**
 * The git stack of `fleet`: the network and firewall, tokens, the teardown guard (a local command,
 * components/hcloud/apiMembersGuard.ts), and the Scaleway provider for Elastic Metal pools.
 */
export function fleetPlugins(fleet: FleetSpec): ProviderPlugin[] {
  const kinds = new Set(fleet.pools.map((pool) => pool.provider));
  const names: SdkName[] = ["hcloud", "kubernetes", "random", "time", "command"];
  if (kinds.has("scaleway-elastic-metal")) names.push("scaleway");
  return pluginsOf(names);
}

/**
 * Every plugin any run can load (all the SDKs above): what a container image installs at build time
 * so the service needs no download (deploy/Containerfile, imagePlugins.ts).
 */
export function everyProviderPlugin(): ProviderPlugin[] {
  return pluginsOf(Object.keys(SDKS) as SdkName[]);
}

/** `name version`, as logs and errors name a plugin. */
export function pluginLabel(plugin: ProviderPlugin): string {
  return `${plugin.name} ${plugin.version}`;
}

function executableAt(path: string): string | undefined {
  try {
    accessSync(path, constants.X_OK);
    return path;
  } catch {
    return undefined;
  }
}

/** The plugin cache's layout, in a Pulumi home's plugins/ and in an operator's plugin directory alike. */
export function pluginCacheEntry(dir: string, plugin: ProviderPlugin): string {
  return join(dir, `resource-${plugin.name}-v${plugin.version}`, `pulumi-resource-${plugin.name}`);
}

/** The executable Pulumi loads for `plugin` from the plugin cache of `pulumiHome`, when fully installed there. */
export function installedPluginPath(pulumiHome: string, plugin: ProviderPlugin): string | undefined {
  const executable = pluginCacheEntry(join(pulumiHome, "plugins"), plugin);
  // Pulumi marks an install in progress with `<folder>.partial`; such a folder is not a plugin yet.
  return existsSync(`${dirname(executable)}.partial`) ? undefined : executableAt(executable);
}

/** The executable for `plugin` in an operator's plugin directory (laid out as a plugin cache: another machine's ~/.pulumi/plugins). */
export function pluginInDirectory(dir: string, plugin: ProviderPlugin): string | undefined {
  return executableAt(pluginCacheEntry(dir, plugin));
}

/** The command that puts `plugin` into `pulumiHome`: from a file, or downloaded as Pulumi would. */
export function installCommand(pulumiHome: string, plugin: ProviderPlugin, file?: string): string {
  const source = file ? ` --file ${file}` : plugin.server ? ` --server ${plugin.server}` : "";
  return `PULUMI_HOME=${pulumiHome} pulumi plugin install resource ${plugin.name} ${plugin.version}${source}`;
}

/** Plugins that could not be had: each named with its version, its SDK and the command that provides it. */
export class ProviderPluginsMissingError extends Error {
  override readonly name = "ProviderPluginsMissingError";
  constructor(
    readonly missing: readonly ProviderPlugin[],
    pulumiHome: string,
    readonly reasons: ReadonlyMap<string, string>,
  ) {
    const each = missing.map((p) => {
      const fromFile = installCommand(pulumiHome, p, `<pulumi-resource-${p.name} binary>`);
      return `${pluginLabel(p)} (pinned by ${p.sdk}; ${reasons.get(p.name) ?? "not installed"}): run \`${installCommand(pulumiHome, p)}\` or \`${fromFile}\``;
    });
    super(
      `provider plugins missing, so no run starts: ${each.join("; ")}; or put them in NODEFLEET_PLUGIN_DIR as resource-<name>-v<version>/pulumi-resource-<name>; then restart`,
    );
  }
}
