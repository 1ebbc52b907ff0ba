/**
 * Reads `stacks/Pulumi.<stack>.yaml` the way Pulumi does for a project with `stackConfigDir: stacks`.
 * Values under `secure:` are encrypted with the stack's secrets provider and cannot be read offline:
 * they are reported (by config path) and left out, so render and the simulated engine still work.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import type { StackConfigValue } from "./engine/stackEngine";

export interface StackConfigFile {
  readonly stackName: string;
  readonly path: string;
  /** Full config keys to values; `secret` when the key held a `secure:` value. */
  readonly config: Record<string, StackConfigValue>;
  /** Config paths (`nodefleet:cluster.kubeconfig`) whose encrypted values were left out. */
  readonly encryptedPaths: string[];
}

/** The project root: the nearest directory above `from` holding Pulumi.yaml (the working directory first). */
export function projectRoot(from: string = process.cwd()): string {
  for (const start of [from, path.resolve(__dirname, "..", "..")]) {
    let dir = path.resolve(start);
    for (;;) {
      if (fs.existsSync(path.join(dir, "Pulumi.yaml"))) return dir;
      const parent = path.dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  throw new Error("no Pulumi.yaml found in the working directory or above; run nodefleet inside the project");
}

/** The names `stacks/Pulumi.<stack>.yaml` may carry (no path separators). */
export const STACK_CONFIG_NAME = /^[A-Za-z0-9_.-]+$/;

export function stackConfigPath(stackName: string, root: string = projectRoot()): string {
  if (!STACK_CONFIG_NAME.test(stackName)) {
    throw new Error(`stack name ${JSON.stringify(stackName)} may only contain letters, digits, '_', '.' and '-'`);
  }
  return path.join(root, "stacks", `Pulumi.${stackName}.yaml`);
}

function isSecure(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 1 && "secure" in value;
}

/** Removes `secure:` leaves, recording their paths. */
function stripSecure(value: unknown, at: string, found: string[]): unknown {
  if (isSecure(value)) {
    found.push(at);
    return undefined;
  }
  if (Array.isArray(value)) return value.map((v, i) => stripSecure(v, `${at}[${i}]`, found));
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const stripped = stripSecure(v, `${at}.${k}`, found);
      if (stripped !== undefined) out[k] = stripped;
    }
    return out;
  }
  return value;
}

export function readStackConfigFile(stackName: string, root: string = projectRoot()): StackConfigFile {
  const file = stackConfigPath(stackName, root);
  if (!fs.existsSync(file)) {
    const known = fs
      .readdirSync(path.join(root, "stacks"))
      .map((f) => /^Pulumi\.(.+)\.yaml$/.exec(f)?.[1])
      .filter((s): s is string => Boolean(s));
    throw new Error(`stack ${stackName}: ${path.relative(root, file)} does not exist (stacks here: ${known.join(", ") || "none"})`);
  }
  return parseStackConfig(stackName, file, fs.readFileSync(file, "utf8"));
}

/** The cluster id `stacks/Pulumi.<stack>.yaml` declares (`nodefleet:cluster.id`), read without checking the rest. */
export function declaredClusterId(stackName: string, root: string = projectRoot()): string | undefined {
  const cluster = configValues(readStackConfigFile(stackName, root).config)["nodefleet:cluster"] as { id?: unknown } | undefined;
  return typeof cluster?.id === "string" ? cluster.id : undefined;
}

/** A stack config file's text (from the working tree or a git ref at `file`), secure values left out. */
export function parseStackConfig(stackName: string, file: string, text: string): StackConfigFile {
  const document = parse(text) as { config?: Record<string, unknown> } | null;
  const encryptedPaths: string[] = [];
  const config: Record<string, StackConfigValue> = {};
  for (const [key, raw] of Object.entries(document?.config ?? {})) {
    const before = encryptedPaths.length;
    const value = stripSecure(raw, key, encryptedPaths);
    if (value !== undefined) config[key] = { value, secret: encryptedPaths.length > before };
  }
  return { stackName, path: file, config, encryptedPaths };
}

/** Plain values by key, as the mock runtime and parseFleetSpec take them. */
export function configValues(config: Readonly<Record<string, StackConfigValue>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(config).map(([k, v]) => [k, v.value]));
}
