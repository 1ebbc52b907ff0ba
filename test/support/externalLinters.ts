/**
 * Runs the real `cloud-init schema`, `shellcheck`, `netplan` and `nft` binaries on rendered text, as CI and
 * users do. The tools are required (CI installs them); a missing tool fails with how to get it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

function withTempFile<T>(fileName: string, content: string, use: (path: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), "nodefleet-lint-"));
  try {
    const path = join(dir, fileName);
    writeFileSync(path, content, { mode: 0o600 });
    return use(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function run(command: string, args: string[], installHint: string): { status: number; output: string } {
  const result = spawnSync(command, args, { encoding: "utf8", timeout: 60_000 });
  if (result.error) {
    throw new Error(`${command} could not run (${result.error.message}); ${installHint}`);
  }
  return { status: result.status ?? -1, output: `${result.stdout ?? ""}${result.stderr ?? ""}`.trim() };
}

/** Throws unless `cloud-init schema --config-file` accepts the user data (exit 0). */
export function assertCloudInitSchemaValid(yamlText: string): void {
  withTempFile("user-data.yaml", yamlText, (path) => {
    const { status, output } = run("cloud-init", ["schema", "--config-file", path], "install it with `apt-get install cloud-init`");
    if (status !== 0) {
      throw new Error(`cloud-init schema rejected the user data (exit ${status}):\n${output}`);
    }
  });
}

/**
 * Throws unless `shellcheck` reports nothing for the script (exit 0). The shell dialect comes from the
 * script's shebang; bash is assumed when there is none.
 */
export function assertShellcheckClean(script: string): void {
  withTempFile("script.sh", script, (path) => {
    const args = script.startsWith("#!") ? [path] : ["--shell=bash", path];
    const { status, output } = run("shellcheck", args, "install it with `apt-get install shellcheck`");
    if (status !== 0) {
      throw new Error(`shellcheck found problems (exit ${status}):\n${output}`);
    }
  });
}

const NETPLAN_INSTALL_HINT = "install it with `apt-get install netplan.io`";

/** The real netplan CLI's path (the tests' shims delegate to it); throws with how to get it. */
export function netplanBinary(): string {
  const found = spawnSync("bash", ["-c", "command -v netplan || ls /usr/sbin/netplan"], { encoding: "utf8" });
  const path = found.stdout.trim().split("\n")[0];
  if (found.status !== 0 || !path) throw new Error(`netplan could not be found; ${NETPLAN_INSTALL_HINT}`);
  return path;
}

/** `netplan generate --root-dir root`: exit status and output (netplan's errors name file, line and rule). */
export function netplanGenerate(root: string): { status: number; output: string } {
  return run(netplanBinary(), ["generate", "--root-dir", root], NETPLAN_INSTALL_HINT);
}

/** Throws unless `nft -c -f` (check only, nothing is loaded) accepts the ruleset. */
export function assertNftRulesetValid(ruleset: string): void {
  withTempFile("ruleset.nft", ruleset, (path) => {
    const { status, output } = run("nft", ["-c", "-f", path], "install it with `apt-get install nftables` (nft -c needs root)");
    if (status !== 0) throw new Error(`nft -c rejected the ruleset (exit ${status}):\n${output}`);
  });
}
