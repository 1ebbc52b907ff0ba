/**
 * The preview guard's fingerprint: a digest of everything, outside the members' own frozen
 * snapshots, that could move a member the API stack already holds (docs/scaling-api.md, "When the
 * preview guard runs"). A run whose fingerprint equals the one stored after the last successful up
 * can only add members and remove terminating ones, so it needs no preview; any difference, or a
 * fingerprint that cannot be taken, and the guard runs.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import type { StackDefinition, StoredState } from "../engine/stackEngine";
import { apiStackPlugins, pluginSource } from "../engine/providerPlugins";
import { canonicalHash, sha256Hex } from "../../components/shared/canonicalJson";
import { FINGERPRINT_PARTS, type FingerprintPart, type GuardFingerprint } from "../store/guardFingerprints";
import type { AutoscaledProgramArgs } from "./apiStack";

/** The parts that differ (every part when nothing was stored). */
export function changedParts(stored: GuardFingerprint | undefined, current: GuardFingerprint): FingerprintPart[] {
  return FINGERPRINT_PARTS.filter((part) => stored?.[part] !== current[part]);
}

/** The same fingerprint with the state part of another moment (the state the up left). */
export function withState(fingerprint: GuardFingerprint, state: Pick<StoredState, "digest">): GuardFingerprint {
  return { ...fingerprint, state: state.digest };
}

interface PackageInfo {
  readonly root: string;
  readonly id: string;
}

/** Dependencies by folder: read once per process (an upgrade of one comes with a restart anyway). */
const dependencies = new Map<string, PackageInfo | undefined>();

/** The nearest package.json at or above `dir`: its folder and `name@version`; the program's own is read each time. */
function packageOf(dir: string, cache?: Map<string, PackageInfo | undefined>): PackageInfo | undefined {
  if (cache?.has(dir)) return cache.get(dir);
  let found: PackageInfo | undefined;
  try {
    const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
    found = { root: dir, id: `${manifest.name ?? path.basename(dir)}@${manifest.version ?? "?"}` };
  } catch {
    const parent = path.dirname(dir);
    found = parent === dir ? undefined : packageOf(parent, cache);
  }
  cache?.set(dir, found);
  return found;
}

/**
 * The dependency (`name@version`) a file belongs to: the package folder after its last
 * `node_modules`, unless that is the program's own package (installed under node_modules itself).
 */
function dependencyOf(file: string, own: PackageInfo | undefined): string | undefined {
  const marker = `${path.sep}node_modules${path.sep}`;
  const at = file.lastIndexOf(marker);
  if (at < 0) return undefined;
  if (own && file.startsWith(own.root + path.sep) && at < own.root.length) return undefined;
  const rest = file.slice(at + marker.length).split(path.sep);
  const name = rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
  return name ? (packageOf(file.slice(0, at + marker.length) + name, dependencies)?.id ?? name) : undefined;
}

/**
 * The program's identity: its package (`name@version`), the content of every file of that package
 * its module loads (the require graph, so the compiled stacks/, components/ and the reconciler
 * modules they import, whatever their layout), and the version of each dependency it reaches. The
 * module is loaded if it is not yet (the automation engine runs it in this process, so the graph is
 * the code that runs); the contents are read from disk, so an edit there counts even before a
 * restart loads it (a guard more, never one less).
 */
export function programIdentity(module: string): string {
  const resolved = require.resolve(module);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!require.cache[resolved]) require(resolved);
  const own = packageOf(path.dirname(resolved));
  const files: Array<[string, string]> = [];
  const reached = new Set<string>();
  const seen = new Set<string>();
  const pending = [require.cache[resolved]!];
  while (pending.length > 0) {
    const current = pending.pop()!;
    if (seen.has(current.filename)) continue;
    seen.add(current.filename);
    const dependency = dependencyOf(current.filename, own);
    if (dependency !== undefined) {
      reached.add(dependency);
      continue;
    }
    const name = own ? path.relative(own.root, current.filename) : current.filename;
    files.push([name, sha256Hex(readFileSync(current.filename, "latin1"))]);
    pending.push(...current.children);
  }
  return canonicalHash({
    package: own?.id ?? null,
    files: files.sort(([a], [b]) => (a < b ? -1 : 1)),
    dependencies: [...reached].sort(),
  });
}

/** The kubeconfig the program reads when `cluster.kubeconfigFromEnvironment` (components/fleet/clusterKubeconfig.ts), by content. */
function environmentKubeconfig(env: NodeJS.ProcessEnv): string | null {
  const file = env.KUBECONFIG;
  if (!file) return null;
  try {
    return sha256Hex(readFileSync(file, "latin1"));
  } catch (error) {
    return `unreadable: ${(error as NodeJS.ErrnoException).code ?? "error"}`;
  }
}

/**
 * The fingerprint of a run of `stack` against `state`. Secret config values go into the config
 * digest as they are: only the digest is stored, in the store beside the claims (0600, as the
 * passphrase the data directory holds already).
 */
export function guardFingerprint(input: {
  readonly stack: StackDefinition;
  readonly state: Pick<StoredState, "digest">;
  /** The program's identity; default programIdentity(stack.program.module). */
  readonly program?: string;
  readonly env?: NodeJS.ProcessEnv;
}): GuardFingerprint {
  const env = input.env ?? process.env;
  const { members: _members, ...shared } = (input.stack.program.args ?? {}) as Partial<AutoscaledProgramArgs>;
  return {
    program: input.program ?? programIdentity(input.stack.program.module),
    config: canonicalHash({ config: input.stack.config, kubeconfig: environmentKubeconfig(env) }),
    shared: canonicalHash({ stackName: input.stack.stackName, args: shared }),
    plugins: canonicalHash({ source: pluginSource(env), plugins: apiStackPlugins().map((p) => `${p.name}@${p.version}`) }),
    state: input.state.digest,
  };
}
