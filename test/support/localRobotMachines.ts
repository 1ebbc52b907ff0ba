/**
 * For real-engine tests of the local stack's Robot pool: the skip (or, under
 * NODEFLEET_REQUIRE_TOOLCHAIN=1, the failure) when the Robot machines cannot run here, and the
 * stop that checks no machine outlives the local cloud.
 */
import assert from "node:assert/strict";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type LocalCloud, type LocalCloudOptions, startLocalCloud } from "../../automation/local/localCloud";
import { SSHD } from "../../automation/local/machines/openSshServer";
import { processesMentioning } from "./processesMentioning";
import { LOCAL_CLOUD_TOOLS, missingTools, skipUnlessAvailable } from "./toolchainRequirement";

/** Skips the suite unless OpenSSH, unshare, nsenter, root and the toolchain (with `extraTools`) are here. */
export function skipUnlessRobotMachines(context: Mocha.Context, ...extraTools: string[]): void {
  const missing = [SSHD, "/usr/bin/ssh", "/usr/bin/unshare", "/usr/bin/nsenter"].filter((tool) => !existsSync(tool));
  skipUnlessAvailable(
    context,
    missing.length ? `${missing.join(", ")} not installed (Debian: openssh-server, openssh-client, util-linux)` : undefined,
  );
  skipUnlessAvailable(context, process.getuid?.() === 0 ? undefined : "the machines' sandbox needs root (mount namespaces, overlayfs)");
  skipUnlessAvailable(context, missingTools(...LOCAL_CLOUD_TOOLS, ...extraTools));
}

/** Stops the local cloud (if started) and removes `dir`, failing when a process of a machine under `dir` is left. */
export async function stopLocalCloudLeavingNoMachine(cloud: LocalCloud | undefined, dir: string | undefined): Promise<void> {
  await cloud?.stop();
  if (!dir) return;
  const left = processesMentioning(dir).filter((line) => !line.includes("mocha"));
  rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(left, [], "stopping the local cloud leaves no machine process");
}

/**
 * The local cloud of a Robot real-engine suite: its data in `<dir>/data`, the project given, the
 * Robot machines on, the node agent every 300 ms, the cloud's warnings collected into `warnings`;
 * `extra` adds or replaces options.
 */
export function startRobotLocalCloud(
  dir: string,
  project: string,
  warnings: string[],
  extra: Partial<LocalCloudOptions> = {},
): Promise<LocalCloud> {
  return startLocalCloud({
    dataDir: join(dir, "data"),
    hcloudPort: 0,
    agentIntervalMs: 300,
    logger: { info() {}, warn: (_fields: unknown, message: string) => void warnings.push(message) },
    projectDir: project,
    robotMachines: true,
    ...extra,
  });
}
