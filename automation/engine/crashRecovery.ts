/**
 * Crash recovery for the automation engine, run before every engine run (docs/design.md §4.1), with
 * Pulumi's own mechanisms and, on the file backend, without a CLI process when there is nothing to
 * do: a stack lock left by a pulumi process of this machine that no longer runs is removed (from
 * the directory, or from the bucket of an `s3://` backend, where a run fenced across replicas also
 * removes another machine's: `fence`); pending creates of servers (Hetzner Cloud, Scaleway Elastic
 * Metal) are looked up by name and ownership labels or tags and adopted into the exported state
 * with their id (or deleted), the others dropped. Why not the CLI's `refresh
 * --import-pending-creates`: docs/engines.md. Every step is idempotent, so a crash during recovery
 * is recovered by the next run.
 */
import { hostname } from "node:os";
import type { Deployment, Stack } from "@pulumi/pulumi/automation";
import { type PendingOperation, fileBackendDir, pendingOperations, removeStaleLocks, stackLocks } from "./fileBackendState";
import type { HcloudClient } from "../hcloud/hcloudClient";
import type { ElasticMetalApi } from "../scaleway/elasticMetalApi";
import { type StackFence, objectStoreLocation, objectStoreLocks, removeStaleObjectStoreLocks } from "./objectStoreLocks";
import type { EngineLogger } from "./stackEngine";

/** A server the provider has under a pending create's name. */
export interface FoundServer {
  /** Its id as the provider's resource keeps it in the state (Hetzner: the number; Scaleway: `<zone>/<uuid>`). */
  readonly id: string;
  readonly name: string;
  /** Its ownership marks as `key=value`: Hetzner's labels, Scaleway's tags. */
  readonly marks: readonly string[];
}

/** How crash recovery finds one provider's servers again by name and tells ours by their marks. */
export interface ServerLookup {
  /** What the marks are called at that provider, for the report. */
  readonly marksAre: "labels" | "tags";
  /** The marks the pending create asked for, `key=value`. */
  wanted(inputs: Readonly<Record<string, unknown>>): string[];
  /** The servers of exactly this name (every page), where the pending create's inputs put it. */
  find(name: string, inputs: Readonly<Record<string, unknown>>): Promise<FoundServer[]>;
  /** Deletes one (strategy "delete"). */
  remove(server: FoundServer): Promise<void>;
}

/** The look-ups by resource type. */
export type ServerLookups = Readonly<Record<string, ServerLookup>>;

export type PendingCreateAction =
  | { readonly action: "import" | "delete"; readonly urn: string; readonly type: string; readonly server: FoundServer }
  | { readonly action: "clear"; readonly urn: string; readonly reason: string };

const HCLOUD_SERVER = "hcloud:index/server:Server";
const SCALEWAY_SERVER = "scaleway:elasticmetal/server:Server";

/**
 * Inputs an adopted resource is recorded without: what the provider's create sets only after the
 * order, which an interrupted create may never have reached. Upstream's Elastic Metal create
 * (terraform-provider-scaleway internal/services/baremetal/server.go, ResourceServerCreate) adds
 * the options and the private networks after the install; left out, the next `pulumi up` sees
 * them as changed and sets them in place (both idempotent: an option or attachment already there
 * is kept).
 */
const SET_AFTER_THE_ORDER: Readonly<Record<string, readonly string[]>> = { [SCALEWAY_SERVER]: ["options", "privateNetworks"] };

function plainLabels(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null) return {};
  return Object.fromEntries(Object.entries(value).filter(([, v]) => typeof v === "string")) as Record<string, string>;
}

const asMarks = (labels: Record<string, string>) => Object.entries(labels).map(([k, v]) => `${k}=${v}`);

/** Hetzner Cloud servers: names are unique per project, ownership is in the labels. */
export function hcloudServerLookup(hcloud: HcloudClient | undefined): ServerLookup {
  const client = (name: string) => {
    if (!hcloud) throw new Error(`crash recovery must look up server ${name} at Hetzner Cloud but HCLOUD_TOKEN is not set`);
    return hcloud;
  };
  return {
    marksAre: "labels",
    wanted: (inputs) => asMarks(plainLabels(inputs.labels)),
    find: async (name) =>
      (await client(name).listServers({ name })).map((s) => ({ id: String(s.id), name: s.name, marks: asMarks(s.labels) })),
    remove: (server) => client(server.name).deleteServer(Number(server.id)),
  };
}

/**
 * Scaleway Elastic Metal servers: Scaleway takes two servers of one name, so the name alone would
 * adopt another's; ownership is in the tags (the pool's cluster, pool and node tags). The list
 * matches names by substring: only the exact name counts. The zone is the create's, else the
 * provider's default (`SCW_DEFAULT_ZONE`, else fr-par-1, as upstream's).
 */
export function elasticMetalServerLookup(api: ElasticMetalApi | undefined, defaultZone = "fr-par-1"): ServerLookup {
  const client = (name: string) => {
    if (!api) throw new Error(`crash recovery must look up Elastic Metal server ${name} at Scaleway but SCW_SECRET_KEY is not set`);
    return api;
  };
  return {
    marksAre: "tags",
    wanted: (inputs) => (Array.isArray(inputs.tags) ? inputs.tags.filter((t): t is string => typeof t === "string") : []),
    find: async (name, inputs) => {
      const zone = typeof inputs.zone === "string" && inputs.zone !== "" ? inputs.zone : defaultZone;
      const listed = await client(name).listServers(zone, { name });
      return listed.filter((s) => s.name === name).map((s) => ({ id: `${s.zone}/${s.id}`, name: s.name, marks: s.tags }));
    },
    remove: (server) => {
      const [zone, id] = server.id.split("/");
      return client(server.name).deleteServer(zone!, id!);
    },
  };
}

/** The look-ups of every server type crash recovery adopts. */
export function serverLookups(clients: {
  readonly hcloud?: HcloudClient;
  readonly scaleway?: ElasticMetalApi;
  readonly scalewayZone?: string;
}): ServerLookups {
  return {
    [HCLOUD_SERVER]: hcloudServerLookup(clients.hcloud),
    [SCALEWAY_SERVER]: elasticMetalServerLookup(clients.scaleway, clients.scalewayZone),
  };
}

/**
 * Decides, per pending create, what to do with what the provider has under that name. Pure apart
 * from the injected look-ups. A server with the name but without all our marks is not ours: it is
 * left alone and reported.
 */
export async function planPendingCreates(
  pending: readonly PendingOperation[],
  lookups: ServerLookups,
  strategy: "import" | "delete",
): Promise<PendingCreateAction[]> {
  const actions: PendingCreateAction[] = [];
  for (const op of pending) {
    if (op.type !== "creating") {
      actions.push({ action: "clear", urn: op.resource.urn, reason: `pending ${op.type} operation` });
      continue;
    }
    const inputs = op.resource.inputs ?? {};
    const name = inputs.name;
    const lookup = Object.hasOwn(lookups, op.resource.type) ? lookups[op.resource.type] : undefined;
    if (!lookup || typeof name !== "string") {
      actions.push({
        action: "clear",
        urn: op.resource.urn,
        reason: `pending create of ${op.resource.type} (not looked up; the next up creates it again)`,
      });
      continue;
    }
    const wanted = lookup.wanted(inputs);
    const servers = (await lookup.find(name, inputs)).filter((s) => s.name === name);
    const ours = servers.find((s) => wanted.every((mark) => s.marks.includes(mark)));
    if (ours) actions.push({ action: strategy, urn: op.resource.urn, type: op.resource.type, server: ours });
    else if (servers.length > 0)
      actions.push({
        action: "clear",
        urn: op.resource.urn,
        reason: `a server named ${name} exists without our ${lookup.marksAre}; left alone`,
      });
    else actions.push({ action: "clear", urn: op.resource.urn, reason: `server ${name} was never created` });
  }
  return actions;
}

export interface RecoveryOptions {
  readonly stackName: string;
  readonly project: string;
  readonly backendUrl: string;
  readonly hcloud?: HcloudClient;
  /** Looks up pending Elastic Metal creates; `scalewayZone` is the provider's default zone. */
  readonly scaleway?: ElasticMetalApi;
  readonly scalewayZone?: string;
  readonly strategy?: "import" | "delete";
  readonly logger?: EngineLogger;
  /** The engine's environment: an object-storage backend's credentials (objectStoreLocks.ts). */
  readonly env?: NodeJS.ProcessEnv;
  /**
   * A run fenced across replicas (serve's shared mode: the shard's PostgreSQL run lock): an
   * object-storage backend's lock from another machine is then stale (removeStaleObjectStoreLocks).
   */
  readonly fence?: StackFence;
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
 * until the refresh reads the server; without the inputs its create sets after the order, see
 * SET_AFTER_THE_ORDER). Appended last, after everything it can depend on.
 */
export function adoptPendingCreates(deployment: RecoverableDeployment, actions: readonly PendingCreateAction[]): RecoverableDeployment {
  const imports = new Map(
    actions.filter((a): a is Extract<PendingCreateAction, { server: FoundServer }> => a.action === "import").map((a) => [a.urn, a.server]),
  );
  const pending = deployment.pending_operations ?? [];
  const adopted = pending
    .filter((op) => op.type === "creating" && imports.has(op.resource.urn))
    .map((op) => {
      const later = SET_AFTER_THE_ORDER[op.resource.type] ?? [];
      const inputs = Object.fromEntries(Object.entries(op.resource.inputs ?? {}).filter(([key]) => !later.includes(key)));
      return { ...op.resource, id: imports.get(op.resource.urn)!.id, inputs, outputs: { ...inputs, ...op.resource.outputs } };
    });
  return {
    ...deployment,
    resources: [...(deployment.resources ?? []), ...adopted],
    pending_operations: pending.filter((op) => op.type !== "creating"),
  };
}

/** The fence, saying in the log why the run waits for another machine's lock. */
function loggedFence(fence: StackFence, options: RecoveryOptions): StackFence {
  return {
    held: () => fence.held(),
    graceMs: fence.graceMs,
    waiting: (locks) =>
      options.logger?.warn(
        { event: "crash_recovery", stack: options.stackName, lockHosts: [...new Set(locks.map((lock) => lock.hostname))] },
        `another host's lock is on the stack while this replica holds its run lock: waiting up to ${Math.round(fence.graceMs / 1000)} s for it to go, then removing it`,
      ),
  };
}

/** How long ago a lock was taken, in whole seconds; undefined when its timestamp does not parse. */
function lockAgeSeconds(timestamp: string | undefined): number | undefined {
  const taken = timestamp === undefined ? Number.NaN : Date.parse(timestamp);
  return Number.isNaN(taken) ? undefined : Math.max(0, Math.round((Date.now() - taken) / 1000));
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
      ? await removeStaleObjectStoreLocks(
          objectStore,
          options.project,
          options.stackName,
          options.fence && loggedFence(options.fence, options),
        )
      : [];
  const removedStaleLocks = removed.length;
  const host = hostname();
  for (const lock of removed) {
    const age = lockAgeSeconds(lock.timestamp);
    if (lock.hostname === host)
      log?.warn(
        { event: "crash_recovery", stack: options.stackName, deadPid: lock.pid, since: lock.timestamp },
        "removed the stack lock of a pulumi process that no longer runs",
      );
    else
      log?.warn(
        {
          event: "crash_recovery",
          stack: options.stackName,
          lockHost: lock.hostname,
          lockPid: lock.pid,
          since: lock.timestamp,
          ...(age !== undefined ? { ageSeconds: age } : {}),
        },
        "removed another host's stack lock: this replica holds the stack's run lock, so no other run of it is live",
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

  const lookups = serverLookups(options);
  const actions = await planPendingCreates(pending, lookups, options.strategy ?? "import");
  for (const action of actions) {
    if (action.action === "delete") await lookups[action.type]!.remove(action.server);
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
