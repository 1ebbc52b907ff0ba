/**
 * PATH of the local cloud's environment: the toolchain first (its kubectl matches the control plane,
 * whatever kubectl the machine has), then the dynamic-provider plugin of @pulumi/pulumi, then the
 * caller's PATH without the entries npm and npx add for the command they run (a `node_modules/.bin`,
 * npx's cache, node-gyp's shim): sourced later in another shell, those would point at a cache
 * directory that may be gone.
 */
import { delimiter } from "node:path";

const ADDED_BY_NPM = /[\\/]node_modules[\\/]\.bin$|[\\/]_npx[\\/]|node-gyp-bin$/;

export function localPath(callerPath: string, toolchainBin: string, sdkDir: string): string {
  const rest = callerPath.split(delimiter).filter((dir) => dir !== "" && dir !== toolchainBin && dir !== sdkDir && !ADDED_BY_NPM.test(dir));
  return [toolchainBin, sdkDir, ...new Set(rest)].join(delimiter);
}
