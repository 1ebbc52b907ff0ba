/**
 * Cloud credentials per cluster, for one service serving clusters in different Hetzner projects or
 * Scaleway and Robot accounts: with NODEFLEET_CLUSTER_CREDENTIALS_DIR set, `<dir>/<stack>/` may hold
 * one file per credential variable (the layout of a Kubernetes Secret mounted as a volume), whose
 * content replaces the service's own variable for that stack's cluster alone: its engine runs, its
 * Hetzner, Scaleway and Robot clients. A stack without a folder uses the service's environment.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** The variables a cluster's folder may set: the clouds' credentials, as the chart's `cloudCredentials` names them. */
const CLUSTER_CREDENTIAL_NAMES = [
  "HCLOUD_TOKEN",
  "SCW_ACCESS_KEY",
  "SCW_SECRET_KEY",
  "SCW_DEFAULT_PROJECT_ID",
  "HROBOT_USER",
  "HROBOT_PASSWORD",
] as const;

/**
 * The environment of `stack`'s cluster: `env` with the credentials of its folder, if any. Refuses a
 * file of another name (naming it and the names allowed) and an empty one; never quotes a value.
 */
export function clusterEnvironment(env: NodeJS.ProcessEnv, stack: string): NodeJS.ProcessEnv {
  const root = env.NODEFLEET_CLUSTER_CREDENTIALS_DIR;
  if (!root) return env;
  const folder = path.join(root, stack);
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(folder, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return env;
    throw new Error(`NODEFLEET_CLUSTER_CREDENTIALS_DIR: cannot read ${folder}: ${(error as Error).message}`);
  }
  const credentials: Record<string, string> = {};
  // A mounted Secret adds `..data` and timestamped folders beside its keys: dot entries are its own.
  for (const entry of entries.filter((e) => !e.name.startsWith("."))) {
    const file = path.join(folder, entry.name);
    if (!(CLUSTER_CREDENTIAL_NAMES as readonly string[]).includes(entry.name)) {
      throw new Error(
        `NODEFLEET_CLUSTER_CREDENTIALS_DIR: ${file} names no credential this service reads; a cluster's folder holds files named ${CLUSTER_CREDENTIAL_NAMES.join(", ")}`,
      );
    }
    const value = fs.readFileSync(file, "utf8").replace(/\r?\n$/, "");
    if (value === "") throw new Error(`NODEFLEET_CLUSTER_CREDENTIALS_DIR: ${file} is empty; remove it to use the service's ${entry.name}`);
    credentials[entry.name] = value;
  }
  return { ...env, ...credentials };
}
