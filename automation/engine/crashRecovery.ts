/**
 * Crash recovery for the automation engine, run before every engine run (SPEC §4):
 * 1. a run marker (`<dataDir>/engine-runs/<stack>.json`, our pid) left by a dead process of this
 *    data directory means its lock on the stack is stale: `pulumi cancel` removes it;
 * 2. resources left with pending `creating` operations may exist at the provider without being in
 *    the state. hcloud servers are looked up by name and ownership labels and imported into the
 *    state (or deleted, by choice), so the next up neither duplicates them nor clashes on the name;
 *    then the pending operations are cleared (export, edit, import of the deployment).
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Stack } from "@pulumi/pulumi/automation";
import { writeFileAtomic } from "../simulated/simulatedCloud";
import { processAlive } from "../simulated/stackLock";
import type { HcloudClient, HcloudServer } from "./hcloudClient";
import type { EngineLogger } from "./stackEngine";

export interface RunMarker {
  readonly pid: number;
  readonly hostname: string;
  readonly startedAt: string;
  readonly kind: string;
}

function markerPath(dataDir: string, stackName: string): string {
  return join(dataDir, "engine-runs", `${stackName}.json`);
}

export function readRunMarker(dataDir: string, stackName: string): RunMarker | undefined {
  try {
    return JSON.parse(readFileSync(markerPath(dataDir, stackName), "utf8")) as RunMarker;
  } catch {
    return undefined;
  }
}

export function writeRunMarker(dataDir: string, stackName: string, kind: string): void {
  mkdirSync(join(dataDir, "engine-runs"), { recursive: true, mode: 0o700 });
  writeFileAtomic(markerPath(dataDir, stackName), JSON.stringify({ pid: process.pid, hostname: hostname(), startedAt: new Date().toISOString(), kind } satisfies RunMarker));
}

export function clearRunMarker(dataDir: string, stackName: string): void {
  if (readRunMarker(dataDir, stackName)?.pid === process.pid) rmSync(markerPath(dataDir, stackName), { force: true });
}

/** True when the marker was left by a process of this machine that no longer runs. */
export function markerIsStale(marker: RunMarker | undefined): boolean {
  return marker !== undefined && marker.hostname === hostname() && marker.pid !== process.pid && !processAlive(marker.pid);
}

export interface PendingOperation {
  readonly type: string;
  readonly resource: {
    readonly urn: string;
    readonly type: string;
    readonly custom?: boolean;
    readonly id?: string;
    readonly inputs?: Record<string, unknown>;
    readonly outputs?: Record<string, unknown>;
    readonly [key: string]: unknown;
  };
}

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
      actions.push({ action: "clear", urn: op.resource.urn, reason: `pending create of ${op.resource.type} (not looked up; the next up creates it again)` });
      continue;
    }
    const wanted = plainLabels(op.resource.inputs?.labels);
    const servers = await findByName(name);
    const ours = servers.find((s) => Object.entries(wanted).every(([k, v]) => s.labels[k] === v));
    if (ours) actions.push({ action: strategy, urn: op.resource.urn, server: ours });
    else if (servers.length > 0) actions.push({ action: "clear", urn: op.resource.urn, reason: `a server named ${name} exists without our labels; left alone` });
    else actions.push({ action: "clear", urn: op.resource.urn, reason: `server ${name} was never created` });
  }
  return actions;
}

/** The state record an adopted server gets: its declared inputs plus what the API reports. */
export function adoptedResource(pending: PendingOperation["resource"], server: HcloudServer): Record<string, unknown> {
  const inputs = pending.inputs ?? {};
  return {
    ...pending,
    id: String(server.id),
    outputs: {
      ...inputs,
      ...(pending.outputs ?? {}),
      status: server.status,
      ipv4Address: server.public_net.ipv4?.ip ?? "",
      ipv6Address: server.public_net.ipv6?.ip ?? "",
    },
  };
}

export interface RecoveryOptions {
  readonly dataDir: string;
  readonly stackName: string;
  readonly hcloud?: HcloudClient;
  readonly strategy?: "import" | "delete";
  readonly logger?: EngineLogger;
}

export interface RecoveryReport {
  readonly cancelledStaleLock: boolean;
  readonly actions: readonly PendingCreateAction[];
}

export async function recoverStack(stack: Stack, options: RecoveryOptions): Promise<RecoveryReport> {
  const log = options.logger;
  let cancelledStaleLock = false;
  const marker = readRunMarker(options.dataDir, options.stackName);
  if (markerIsStale(marker)) {
    log?.warn({ event: "crash_recovery", stack: options.stackName, deadPid: marker!.pid }, "a previous run of this data directory died; cancelling its stale lock");
    try {
      await stack.cancel();
    } catch (error) {
      // No update in progress is the normal case when the crash happened outside an update.
      log?.info({ event: "crash_recovery", stack: options.stackName, detail: (error as Error).message.split("\n")[0] }, "pulumi cancel had nothing to cancel");
    }
    cancelledStaleLock = true;
    rmSync(markerPath(options.dataDir, options.stackName), { force: true });
  }

  const exported = await stack.exportStack();
  const deployment = exported.deployment as { resources?: unknown[]; pending_operations?: PendingOperation[] } | undefined;
  const pending = deployment?.pending_operations ?? [];
  if (!deployment || pending.length === 0) return { cancelledStaleLock, actions: [] };

  const hcloud = options.hcloud;
  const findByName = async (name: string): Promise<HcloudServer[]> => {
    if (!hcloud) throw new Error(`crash recovery must look up server ${name} at Hetzner Cloud but HCLOUD_TOKEN is not set`);
    return hcloud.listServers({ name });
  };
  const actions = await planPendingCreates(pending, findByName, options.strategy ?? "import");
  const resources = [...(deployment.resources ?? [])];
  for (const action of actions) {
    const op = pending.find((p) => p.resource.urn === action.urn)!;
    if (action.action === "import") resources.push(adoptedResource(op.resource, action.server));
    if (action.action === "delete") await hcloud!.deleteServer(action.server.id);
    log?.warn(
      { event: "crash_recovery", stack: options.stackName, urn: action.urn, action: action.action, ...(action.action === "clear" ? { reason: action.reason } : { serverId: action.server.id }) },
      `pending operation on ${action.urn}: ${action.action}`,
    );
  }
  await stack.importStack({ version: exported.version, deployment: { ...deployment, resources, pending_operations: [] } });
  return { cancelledStaleLock, actions };
}
