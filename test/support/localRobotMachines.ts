/**
 * For real-engine tests of the local stack's Robot pool: the skip (or, under
 * NODEFLEET_REQUIRE_TOOLCHAIN=1, the failure) when the Robot machines cannot run here.
 */
import { existsSync } from "node:fs";
import { SSHD } from "../../automation/local/machines/openSshServer";
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
