/**
 * Where the engines keep a stack's state under the data directory: the simulated cloud's state and
 * journal, the Automation API's workspace and the file backend's checkpoints. The store's lost-store
 * check asks it (store/storeIntegrity.ts `assertStoreNotLost`): a missing or empty store next to
 * any of these had records.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { stackCheckpointFiles } from "./fileBackendState";

/** Where the engines keep a stack's state under the data directory (simulated cloud, Automation API workspace and file backend). */
export function engineStateOf(dataDir: string, stackName: string): string[] {
  const candidates = [
    path.join(dataDir, "simulated-cloud", "stacks", `${stackName}.json`),
    path.join(dataDir, "simulated-cloud", "stacks", `${stackName}.journal`),
    path.join(dataDir, "workspaces", stackName),
  ];
  return [...candidates.filter((file) => fs.existsSync(file)), ...stackCheckpointFiles(path.join(dataDir, "state"), stackName)];
}

/** Every stack whose state the engines keep under the data directory, by name. */
export function stackNamesWithState(dataDir: string): string[] {
  const names = new Set<string>();
  for (const file of entries(path.join(dataDir, "simulated-cloud", "stacks"))) names.add(file.replace(/\.(json|journal)$/, ""));
  for (const workspace of entries(path.join(dataDir, "workspaces"))) names.add(workspace);
  const projects = path.join(dataDir, "state", ".pulumi", "stacks");
  for (const project of entries(projects)) {
    for (const file of entries(path.join(projects, project))) if (file.endsWith(".json")) names.add(file.slice(0, -".json".length));
  }
  return [...names];
}

function entries(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
