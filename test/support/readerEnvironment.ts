/**
 * The environment of a reader's fresh shell for tests that run documented commands: this process's,
 * less what points at a cloud, a cluster or a Pulumi backend, less the toolchain on PATH (the
 * commands must find it themselves, as the docs say) and less what npm adds to scripts it runs.
 */
import { delimiter } from "node:path";
import { toolchainBinDir } from "../../automation/engine/toolchain";

const PREFIXES = ["NODEFLEET_", "PULUMI_", "HCLOUD_", "SCW_", "HROBOT_", "npm_"];
const NAMES = ["KUBECONFIG", "INIT_CWD"];

export function readerEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const kept = Object.fromEntries(
    Object.entries(env).filter(([name]) => !NAMES.includes(name) && !PREFIXES.some((p) => name.startsWith(p))),
  );
  // The toolchain cache stays where the code looks for it (a reader's home), just not on PATH.
  if (env.NODEFLEET_TOOLCHAIN_DIR) kept.NODEFLEET_TOOLCHAIN_DIR = env.NODEFLEET_TOOLCHAIN_DIR;
  const toolchain = toolchainBinDir(env);
  kept.PATH = (env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => dir && dir !== toolchain && !/node_modules[\\/]\.bin$|node-gyp-bin$/.test(dir))
    .join(delimiter);
  return kept;
}
