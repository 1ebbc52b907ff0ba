/**
 * Passphrase secrets for the automation engine's stacks: PULUMI_CONFIG_PASSPHRASE or
 * PULUMI_CONFIG_PASSPHRASE_FILE when the operator set one; otherwise a random passphrase generated
 * once into `<dataDir>/passphrase` (mode 0600), so the stack's secrets stay readable across restarts.
 */
import { randomBytes } from "node:crypto";
import { chmodSync, closeSync, mkdirSync, openSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";

export interface PassphraseSetting {
  readonly source: "PULUMI_CONFIG_PASSPHRASE" | "PULUMI_CONFIG_PASSPHRASE_FILE" | "generated" | "data-dir";
  /** Environment for the pulumi CLI (never the passphrase itself when it lives in a file). */
  readonly envVars: Readonly<Record<string, string>>;
}

function passphrasePath(dataDir: string): string {
  return join(dataDir, "passphrase");
}

export function resolvePassphrase(dataDir: string, env: NodeJS.ProcessEnv = process.env): PassphraseSetting {
  if (env.PULUMI_CONFIG_PASSPHRASE !== undefined) {
    return { source: "PULUMI_CONFIG_PASSPHRASE", envVars: { PULUMI_CONFIG_PASSPHRASE: env.PULUMI_CONFIG_PASSPHRASE } };
  }
  if (env.PULUMI_CONFIG_PASSPHRASE_FILE) {
    return { source: "PULUMI_CONFIG_PASSPHRASE_FILE", envVars: { PULUMI_CONFIG_PASSPHRASE_FILE: env.PULUMI_CONFIG_PASSPHRASE_FILE } };
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = passphrasePath(dataDir);
  let source: PassphraseSetting["source"] = "data-dir";
  try {
    // "wx": only the first process ever creates it; a concurrent second one reads the winner's.
    const fd = openSync(path, "wx", 0o600);
    writeSync(fd, randomBytes(32).toString("base64url"));
    closeSync(fd);
    source = "generated";
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  }
  return { source, envVars: { PULUMI_CONFIG_PASSPHRASE_FILE: path } };
}
