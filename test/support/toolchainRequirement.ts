/**
 * Tests of the real engine skip, saying why, when the toolchain is missing, unless
 * NODEFLEET_REQUIRE_TOOLCHAIN=1 (CI): then a missing piece fails the test, so a real-engine test
 * can never pass by skipping.
 */
import { TOOLCHAIN_HINT, findTool } from "../../automation/engine/toolchain";

/** What a test on the local cloud runs: the CLI with the plugins of the local stack, and the control plane. */
export const LOCAL_CLOUD_TOOLS = [
  "pulumi",
  "pulumi-language-nodejs",
  "pulumi-resource-command",
  "pulumi-resource-hcloud",
  "pulumi-resource-kubernetes",
  "pulumi-resource-random",
  "pulumi-resource-time",
  "etcd",
  "kube-apiserver",
  "kube-controller-manager",
  "kube-scheduler",
] as const;

/** Why the named toolchain binaries cannot be used here, or undefined when all are found. */
export function missingTools(...names: string[]): string | undefined {
  const missing = names.filter((name) => !findTool(name));
  return missing.length ? `${missing.join(", ")} not on PATH or in the toolchain cache` : undefined;
}

/** Skips the current test or suite (or fails it under NODEFLEET_REQUIRE_TOOLCHAIN=1) when `reason` is set. */
export function skipUnlessAvailable(context: Mocha.Context, reason: string | undefined): void {
  if (!reason) return;
  if (process.env.NODEFLEET_REQUIRE_TOOLCHAIN === "1") throw new Error(`NODEFLEET_REQUIRE_TOOLCHAIN=1 but ${reason}: ${TOOLCHAIN_HINT}`);
  console.log(`      skipped: ${reason} (${TOOLCHAIN_HINT})`);
  context.skip();
}
