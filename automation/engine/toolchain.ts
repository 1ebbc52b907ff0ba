/**
 * Where the real engine's binaries come from, by one rule for the engine, the CLI and the tests:
 * a tool on PATH first, else the toolchain cache that `npm run toolchain` fills
 * (NODEFLEET_TOOLCHAIN_DIR, default ~/.cache/nodefleet/toolchain, binaries in its bin/). Also the
 * environment every pulumi CLI process gets: an isolated PULUMI_HOME, no update checks, no plugin
 * downloads during a run, and plugins from where NODEFLEET_PLUGINS says (providerPlugins.ts).
 */
import { ensureNodefleetPlugin } from "./nodefleetPlugin";
import { accessSync, constants, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { pluginSource } from "./providerPlugins";

export const TOOLCHAIN_HINT = "run `npm run toolchain` (builds the pulumi CLI and plugins from Go modules into the toolchain cache)";

/** The cache's bin/ directory (it may not exist yet). */
export function toolchainBinDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.NODEFLEET_TOOLCHAIN_DIR || join(homedir(), ".cache", "nodefleet", "toolchain"), "bin");
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The absolute path of `name`: on PATH first, else in the toolchain cache; undefined when neither has it. */
export function findTool(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    if (dir && executable(join(dir, name))) return join(dir, name);
  }
  const cached = join(toolchainBinDir(env), name);
  return executable(cached) ? cached : undefined;
}

/** The folder of the installed @pulumi/pulumi package (it ships `pulumi-resource-pulumi-nodejs`). */
export function pulumiSdkDir(): string {
  return dirname(require.resolve("@pulumi/pulumi/package.json"));
}

/**
 * Environment variables for pulumi CLI processes started for `dataDir`. With the toolchain's
 * plugins (NODEFLEET_PLUGINS=toolchain), PATH gains the toolchain cache (after the caller's PATH, so
 * an installed CLI wins) and the dynamic-provider script, and Pulumi loads plugins from PATH. With
 * upstream's (the default), plugins on PATH are ignored: a run loads only what its Pulumi home holds
 * at the pinned versions, and the language host and dynamic provider bundled beside the CLI.
 * NODE_PATH lets the dynamic provider resolve @pulumi/pulumi from a workspace outside the repository.
 * The Pulumi home gets nodefleet's own plugin in both cases (nodefleetPlugin.ts).
 */
export function pulumiProcessEnv(dataDir: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const sdkDir = pulumiSdkDir();
  const nodeModules = dirname(dirname(sdkDir));
  const pulumiHome = env.NODEFLEET_PULUMI_HOME || join(dataDir, "pulumi-home");
  mkdirSync(pulumiHome, { recursive: true, mode: 0o700 });
  ensureNodefleetPlugin(pulumiHome);
  const common = {
    NODE_PATH: [env.NODE_PATH ?? "", nodeModules].filter(Boolean).join(delimiter),
    PULUMI_HOME: pulumiHome,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
  };
  if (pluginSource(env) === "upstream") return { ...common, PATH: env.PATH ?? "", PULUMI_IGNORE_AMBIENT_PLUGINS: "true" };
  return { ...common, PATH: [env.PATH ?? "", toolchainBinDir(env), sdkDir].filter(Boolean).join(delimiter) };
}
