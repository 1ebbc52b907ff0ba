/**
 * Crash recovery for the automation engine, run before every engine run (docs/design.md §4.1), with
 * Pulumi's own mechanisms and, on the file backend, without a CLI process when there is nothing to
 * do: a stack lock left by a pulumi process of this machine that no longer runs is removed (from
 * the directory, or from the bucket of an `s3://` backend); pending
 * creates are looked up at Hetzner by name and ownership labels and adopted into the exported state
 * with their id (or deleted), the others dropped. Why not the CLI's `refresh
 * --import-pending-creates`: docs/engines.md. Every step is idempotent, so a crash during recovery
 * is recovered by the next run.
 */
import type { Deployment, Stack } from "@pulumi/pulumi/automation";
import { type PendingOperation, fileBackendDir, pendingOperations, removeStaleLocks, stackLocks } from "./fileBackendState";
import type { HcloudClient, HcloudServer } from "../hcloud/hcloudClient";
import { objectStoreLocation, objectStoreLocks, removeStaleObjectStoreLocks } from "./objectStoreLocks";
import type { EngineLogger } from "./stackEngine";

export type PendingCreateAction =
  | { readonly action: "import"; readonly urn: string; readonly server: HcloudServer }
  | { readonly action: "delete"; readonly urn: string; readonly server: HcloudServer }
  | { readonly action: "clear"; readonly urn: string; readonly reason: string };

const HCLOUD_SERVER = "hcloud:index/server:Server";

function plainLabels(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === "string")) as Record<string, string>;
}

/**
 * Decides, per pending create, what to do with what the provider has under that name. Pure apart
 * from the injected `findByName` look-up. A server with the name but without all our labels is not
 * ours: it is left alone and reported.
 */
export async function planPendingCreates(
  pending: readonly PendingOperation[],
  findByName: (name: string) => Promise<HcloudServer[]>,
  strategy: "import" | "delete",
): Promise<PendingCreateAction[]> {
  const actions: PendingCreateAction[] = [];
  for (const op of pending) {
    if (op.type !== "creating") {
      actions.push({ action: "clear", urn: op.resource.urn, reason: `pending ${op.type} operation` });
      continue;
    }
    const name = op.resource.inputs?.name;
    if (op.resource.type !== HCLOUD_SERVER || typeof name !== "string") {
      actions.push({
        action: "clear",
        urn: op.resource.urn,
        reason: `pending create of ${op.resource.type} (not looked up; the next up creates it again)`,
      });
      continue;
    }
    const wanted = plainLabels(op.resource.inputs?.labels);
    const servers = await findByName(name);
    const ours = servers.find((s) => Object.entries(wanted).every(([k, v]) => s.labels[k] === v));
    if (ours) actions.push({ action: strategy, urn: op.resource.urn, server: ours });
    else if (servers.length > 0)
      actions.push({ action: "clear", urn: op.resource.urn, reason: `a server named ${name} exists without our labels; left alone` });
    else actions.push({ action: "clear", urn: op.resource.urn, reason: `server ${name} was never created` });
  }
  return actions;
}

export interface RecoveryOptions {
  readonly stackName: string;
  readonly project: string;
  readonly backendUrl: string;
  readonly hcloud?: HcloudClient;
  readonly strategy?: "import" | "delete";
  readonly logger?: EngineLogger;
  /** The engine's environment: an object-storage backend's credentials (objectStoreLocks.ts). */
  readonly env?: NodeJS.ProcessEnv;
}

export interface RecoveryReport {
  readonly removedStaleLocks: number;
  readonly actions: readonly PendingCreateAction[];
}

/** The state's parts recovery edits (an exported deployment, apitype.DeploymentV3). */
export interface RecoverableDeployment {
  resources?: Array<Record<string, unknown>>;
  pending_operations?: PendingOperation[];
  [key: string]: unknown;
}

/**
 * Applies the plan to an exported deployment: every pending create leaves the pending operations;
 * an imported one joins the resources with the found server's id (inputs standing in for outputs
 * until the refresh reads the server). Appended last, after everything it can depend on.
 */
export function adoptPendingCreates(deployment: RecoverableDeployment, actions: readonly PendingCreateAction[]): RecoverableDeployment {
  const imports = new Map(
    actions.filter((a): a is Extract<PendingCreateAction, { action: "import" }> => a.action === "import").map((a) => [a.urn, a.server]),
  );
  const pending = deployment.pending_operations ?? [];
  const adopted = pending
    .filter((op) => op.type === "creating" && imports.has(op.resource.urn))
    .map((op) => ({
      ...op.resource,
      id: String(imports.get(op.resource.urn)!.id),
      outputs: { ...op.resource.inputs, ...op.resource.outputs },
    }));
  return {
    ...deployment,
    resources: [...(deployment.resources ?? []), ...adopted],
    pending_operations: pending.filter((op) => op.type !== "creating"),
  };
}

export async function recoverStack(stack: Stack, options: RecoveryOptions): Promise<RecoveryReport> {
  const log = options.logger;
  const backendDir = fileBackendDir(options.backendUrl);
  let pending: PendingOperation[];
  let exported: Deployment | undefined;
  const objectStore = objectStoreLocation(options.backendUrl, options.env);
  const removed = backendDir
    ? removeStaleLocks(backendDir, options.project, options.stackName)
    : objectStore
      ? await removeStaleObjectStoreLocks(objectStore, options.project, options.stackName)
      : [];
  const removedStaleLocks = removed.length;
  for (const lock of removed) {
    log?.warn(
      { event: "crash_recovery", stack: options.stackName, deadPid: lock.pid, since: lock.timestamp },
      "removed the stack lock of a pulumi process that no longer runs",
    );
  }
  // A live lock (another replica's run, a person's `pulumi up`) means the pending operations are
  // that run's, not a crash's: nothing to recover; the run itself waits for the lock.
  const live = backendDir
    ? stackLocks(backendDir, options.project, options.stackName)
    : objectStore
      ? await objectStoreLocks(objectStore, options.project, options.stackName)
      : [];
  if (live.length > 0) return { removedStaleLocks, actions: [] };
  if (backendDir) {
    pending = pendingOperations(backendDir, options.project, options.stackName);
  } else {
    exported = await stack.exportStack();
    pending = (exported.deployment as { pending_operations?: PendingOperation[] } | undefined)?.pending_operations ?? [];
  }
  if (!pending.some((op) => op.type === "creating")) return { removedStaleLocks, actions: [] };

  const hcloud = options.hcloud;
  const findByName = async (name: string): Promise<HcloudServer[]> => {
    if (!hcloud) throw new Error(`crash recovery must look up server ${name} at Hetzner Cloud but HCLOUD_TOKEN is not set`);
    return hcloud.listServers({ name });
  };
  const actions = await planPendingCreates(pending, findByName, options.strategy ?? "import");
  for (const action of actions) {
    if (action.action === "delete") await hcloud!.deleteServer(action.server.id);
    log?.warn(
      {
        event: "crash_recovery",
        stack: options.stackName,
        urn: action.urn,
        action: action.action,
        ...(action.action === "clear" ? { reason: action.reason } : { serverId: action.server.id }),
      },
      `pending operation on ${action.urn}: ${action.action}`,
    );
  }
  const state = exported ?? (await stack.exportStack());
  await stack.importStack({ ...state, deployment: adoptPendingCreates(state.deployment as RecoverableDeployment, actions) });
  try {
    // Reads every resource back, the adopted servers included; clears the other pending operations.
    await stack.refresh();
  } catch (error) {
    throw new Error(
      `crash recovery of stack ${options.stackName}: pulumi refresh failed: ${(error as Error).message.trim().split("\n").slice(-15).join("\n")}`,
    );
  }
  return { removedStaleLocks, actions };
}
