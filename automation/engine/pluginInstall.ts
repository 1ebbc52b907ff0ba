/**
 * Makes the provider plugins a program needs loadable before its first run. Upstream plugins are
 * installed into the engine's Pulumi home as `pulumi plugin install` does it (what the Automation
 * API's `installPlugin` runs): from the operator's plugin directory when it has them, else
 * downloaded; any still missing fail the start, each named with the command that provides it.
 * Toolchain doubles are only looked up on the CLI's PATH.
 */
import { execFile } from "node:child_process";
import { delimiter } from "node:path";
import { promisify } from "node:util";
import { findTool } from "./toolchain";
import type { PluginSource, ProviderPlugin } from "./providerPlugins";
import { ProviderPluginsMissingError, installedPluginPath, pluginInDirectory } from "./providerPlugins";

const run = promisify(execFile);

/** A download gives up after its own retries; this bounds a stuck one. */
const INSTALL_TIMEOUT_MS = 5 * 60_000;

export interface ResolvedPlugin {
  readonly plugin: ProviderPlugin;
  /** The executable a run loads. */
  readonly path: string;
  readonly from: "plugin cache" | "plugin directory" | "download" | "toolchain";
}

export interface PluginInstallOptions {
  readonly source: PluginSource;
  readonly plugins: readonly ProviderPlugin[];
  /** The pulumi CLI that installs them. */
  readonly pulumi: string;
  /** The CLI processes' environment (PULUMI_HOME, PATH). */
  readonly processEnv: Record<string, string>;
  /** NODEFLEET_PLUGIN_DIR: plugins laid out as a plugin cache, installed from there before any download. */
  readonly pluginDir?: string;
}

/** Every plugin resolved, or ProviderPluginsMissingError naming each one that is not. */
export async function installProviderPlugins(options: PluginInstallOptions): Promise<ResolvedPlugin[]> {
  if (options.source === "toolchain") return toolchainPlugins(options);
  const home = options.processEnv.PULUMI_HOME!;
  const reasons = new Map<string, string>();
  const results = await Promise.all(options.plugins.map((plugin) => installOne(plugin, options, home, reasons)));
  const missing = options.plugins.filter((_, index) => results[index] === undefined);
  if (missing.length > 0) throw new ProviderPluginsMissingError(missing, home, reasons);
  return results as ResolvedPlugin[];
}

async function installOne(
  plugin: ProviderPlugin,
  options: PluginInstallOptions,
  home: string,
  reasons: Map<string, string>,
): Promise<ResolvedPlugin | undefined> {
  const cached = installedPluginPath(home, plugin);
  if (cached) return { plugin, path: cached, from: "plugin cache" };
  const file = options.pluginDir ? pluginInDirectory(options.pluginDir, plugin) : undefined;
  const args = ["plugin", "install", "resource", plugin.name, plugin.version, "--non-interactive"];
  if (file) args.push("--file", file);
  else if (plugin.server) args.push("--server", plugin.server);
  try {
    await run(options.pulumi, args, { env: options.processEnv, timeout: INSTALL_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024 });
  } catch (error) {
    reasons.set(plugin.name, `${file ? `installing ${file}` : "downloading it"} failed: ${lastErrorLine(error)}`);
    return undefined;
  }
  const path = installedPluginPath(home, plugin);
  if (!path) reasons.set(plugin.name, "pulumi plugin install reported success but the plugin cache does not have it");
  return path ? { plugin, path, from: file ? "plugin directory" : "download" } : undefined;
}

function lastErrorLine(error: unknown): string {
  const { stderr, message } = error as { stderr?: string; message?: string };
  const lines = `${stderr ?? ""}\n${message ?? ""}`.split("\n").filter((line) => line.trim() !== "");
  const errorLine = lines.find((line) => line.startsWith("error:")) ?? lines.at(-1) ?? "unknown error";
  return errorLine.replace(/^error:\s*/, "").slice(0, 300);
}

/** The doubles: found the way the CLI will find them, on its PATH (the toolchain's bin/ is on it). */
function toolchainPlugins(options: PluginInstallOptions): ResolvedPlugin[] {
  const missing: ProviderPlugin[] = [];
  const found: ResolvedPlugin[] = [];
  for (const plugin of options.plugins) {
    const path = findTool(`pulumi-resource-${plugin.name}`, {
      PATH: options.processEnv.PATH ?? "",
      NODEFLEET_TOOLCHAIN_DIR: "/nonexistent",
    });
    if (path) found.push({ plugin, path, from: "toolchain" });
    else missing.push(plugin);
  }
  if (missing.length > 0)
    throw new Error(
      `NODEFLEET_PLUGINS=toolchain, but ${missing.map((p) => `pulumi-resource-${p.name}`).join(", ")} ${missing.length === 1 ? "is" : "are"} not on PATH (${(options.processEnv.PATH ?? "").split(delimiter).length} directories) nor in the toolchain: run \`npm run toolchain\`, or unset NODEFLEET_PLUGINS to use upstream's plugins`,
    );
  return found;
}
