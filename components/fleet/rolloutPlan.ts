/**
 * The rolling replacement of a static pool, as a pure function of what is wanted and what runs now,
 * the way a Cluster API MachineDeployment rolls: each `pulumi up` moves the pool one step, at most
 * `maxSurge` servers above the desired count and at most `maxUnavailable` members without a Ready
 * server; an old server goes only once its replacement is Ready (drained first). The same inputs
 * give the same plan, so a run that failed half-way is simply retried. Within a run Pulumi creates
 * before it deletes, so spread-group and network limits count every server present at the start
 * plus the run's creations.
 */
import { HCLOUD_MAX_SERVERS_PER_NETWORK, HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP } from "./hcloudLocations";

/** How fast a pool rolls; see DEFAULT_ROLLOUT. */
export interface RolloutSettings {
  /** Servers a run may create above the pool's desired member count. */
  readonly maxSurge: number;
  /** Members a run may leave without a Ready server (deleting an old one before its replacement exists). */
  readonly maxUnavailable: number;
}

/** Default seconds a departing server's drain may take before the run fails (the pool's `rollout.drainTimeoutSeconds`). */
export const DEFAULT_DRAIN_TIMEOUT_SECONDS = 600;

/** MachineDeployment's safe default: one replacement at a time, never a member down. */
export const DEFAULT_ROLLOUT: RolloutSettings = { maxSurge: 1, maxUnavailable: 0 };

/** A member as this run wants it. */
export interface DesiredRolloutMember {
  readonly nodeId: string;
  /** Generation suffix of its wanted server (fleet/generationSuffix.ts). */
  readonly generation: string;
  /** Placement slot; its home spread group is floor(slot / group size). */
  readonly placementSlot: number;
  /** Its location; with `perLocationGroups` its spread groups are those of this location only. */
  readonly location?: string;
}

/** A server that exists at the start of this run (the previous run's state and the cluster's view). */
export interface CurrentRolloutServer {
  readonly nodeId: string;
  readonly generation: string;
  /** Its Node is registered and Ready. */
  readonly ready: boolean;
  /** The spread group it runs in; a running server never changes group. */
  readonly spreadGroup: number;
  /** Hetzner delete protection as last applied. Default false. */
  readonly deleteProtection?: boolean;
  /** Its location; with `perLocationGroups` its group is `spreadGroup` of this location. */
  readonly location?: string;
}

export interface RolloutLimits {
  /** Servers per spread placement group. Default Hetzner's 10. */
  readonly spreadGroupSize?: number;
  /** Servers per network. Default Hetzner's 100. */
  readonly networkSize?: number;
  /** Servers on the same network that are not this pool's. Default 0. */
  readonly serversOutsidePool?: number;
  /**
   * Spread groups are numbered per location (a pool with several locations): a group holds the
   * servers of one location, so a server only goes to a group of its own. Default false.
   */
  readonly perLocationGroups?: boolean;
}

/** One server this run declares. */
export interface RolloutServer {
  readonly nodeId: string;
  readonly generation: string;
  readonly spreadGroup: number;
  /** `keep`: exists already; `create`: new this run. */
  readonly action: "keep" | "create";
  /**
   * The server should be deleted but is still delete-protected: this run lifts its protection
   * (exactly this server's) and the next run removes it.
   */
  readonly unprotect: boolean;
}

export interface RolloutRemoval {
  readonly nodeId: string;
  readonly generation: string;
  /** `replaced`: its replacement is Ready; `unavailable`: removed within maxUnavailable before its replacement; `stale`: neither it nor its replacement is Ready; `scaled-down`: the member left the pool. */
  readonly reason: "replaced" | "unavailable" | "stale" | "scaled-down";
}

export interface RolloutPlan {
  /** Every server to declare, in slot order (old and new server of a member side by side). */
  readonly servers: readonly RolloutServer[];
  /** Servers left out of the program, so Pulumi drains and deletes them at the end of the run. */
  readonly removals: readonly RolloutRemoval[];
  /** Members not yet running their desired generation alone once this run ends (a surged member counts until its old server goes). */
  readonly remaining: number;
  /** Members whose replacement this run starts (a new-generation server created beside the old one, or the old one removed first). */
  readonly replacing: readonly string[];
  /** Why no further member could start this run, when some wait; absent when nothing waits. */
  readonly waiting?: string;
}

/** Throws, naming the field, unless both are non-negative integers and at least one is positive. */
export function assertRolloutSettings(settings: RolloutSettings, where = "rollout"): void {
  for (const field of ["maxSurge", "maxUnavailable"] as const) {
    const value = settings[field];
    if (!Number.isInteger(value) || value < 0) throw new RangeError(`${where}.${field} must be a whole number of 0 or more, got ${value}`);
  }
  if (settings.maxSurge === 0 && settings.maxUnavailable === 0) {
    throw new RangeError(`${where}: maxSurge and maxUnavailable cannot both be 0 (no member could ever be replaced)`);
  }
}

function bySlot(a: DesiredRolloutMember, b: DesiredRolloutMember): number {
  return a.placementSlot - b.placementSlot || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0);
}

/** Order of members still on an old generation: broken ones first (replacing them costs no availability), then by slot. */
function brokenFirst<T extends { member: DesiredRolloutMember; oldReady: boolean }>(a: T, b: T): number {
  return Number(a.oldReady) - Number(b.oldReady) || bySlot(a.member, b.member);
}

/** The rollout step of this run; deterministic in its inputs. */
export function planRollout(
  desired: readonly DesiredRolloutMember[],
  current: readonly CurrentRolloutServer[],
  settings: RolloutSettings = DEFAULT_ROLLOUT,
  limits: RolloutLimits = {},
): RolloutPlan {
  assertRolloutSettings(settings);
  const groupSize = limits.spreadGroupSize ?? HCLOUD_MAX_SERVERS_PER_SPREAD_GROUP;
  const networkSize = limits.networkSize ?? HCLOUD_MAX_SERVERS_PER_NETWORK;
  const members = [...desired].sort(bySlot);
  const wanted = new Map(members.map((m) => [m.nodeId, m]));

  // Peak occupancy: every server present now stays until the end of the run.
  const groupCount = new Map<string, number>();
  const where = (location: string | undefined) => (limits.perLocationGroups ? (location ?? "") : "");
  const groupKey = (location: string | undefined, group: number) => `${where(location)}#${group}`;
  for (const s of current)
    groupCount.set(groupKey(s.location, s.spreadGroup), (groupCount.get(groupKey(s.location, s.spreadGroup)) ?? 0) + 1);
  let networkCount = (limits.serversOutsidePool ?? 0) + current.length;
  // Extra servers now: those beyond one per member that has any (members still to create are not surge).
  const running = current.filter((s) => wanted.has(s.nodeId));
  let surge = running.length - new Set(running.map((s) => s.nodeId)).size;
  const freeGroup = (home: number, location: string | undefined): number | undefined => {
    const prefix = `${where(location)}#`;
    const known = [...groupCount.keys()].filter((k) => k.startsWith(prefix)).map((k) => Number(k.slice(prefix.length)));
    const candidates = [home, ...known.sort((a, b) => a - b)];
    const next = Math.max(home, ...known) + 1;
    return [...candidates, next].find((g) => (groupCount.get(groupKey(location, g)) ?? 0) < groupSize);
  };
  const occupy = (group: number, location: string | undefined) => {
    groupCount.set(groupKey(location, group), (groupCount.get(groupKey(location, group)) ?? 0) + 1);
    networkCount++;
  };

  const servers: RolloutServer[] = [];
  const removals: RolloutRemoval[] = [];
  const replacing: string[] = [];
  const waiting = new Set<string>();
  const keep = (server: CurrentRolloutServer): RolloutServer => ({
    nodeId: server.nodeId,
    generation: server.generation,
    spreadGroup: server.spreadGroup,
    action: "keep",
    unprotect: false,
  });
  const remove = (server: CurrentRolloutServer, reason: RolloutRemoval["reason"]) => {
    if (server.deleteProtection) servers.push({ ...keep(server), unprotect: true });
    else removals.push({ nodeId: server.nodeId, generation: server.generation, reason });
  };

  for (const server of current) if (!wanted.has(server.nodeId)) remove(server, "scaled-down");

  let unavailable = 0;
  const candidates: Array<{ member: DesiredRolloutMember; olds: CurrentRolloutServer[]; oldReady: boolean }> = [];
  const creates: DesiredRolloutMember[] = [];
  for (const member of members) {
    const existing = current.filter((s) => s.nodeId === member.nodeId);
    const fresh = existing.find((s) => s.generation === member.generation);
    const olds = existing.filter((s) => s !== fresh);
    if (existing.length === 0) {
      creates.push(member);
      continue;
    }
    if (!existing.some((s) => s.ready)) unavailable++;
    if (fresh) servers.push(keep(fresh));
    if (!fresh) {
      candidates.push({ member, olds, oldReady: olds.some((s) => s.ready) });
      continue;
    }
    for (const old of olds) {
      if (fresh.ready) remove(old, "replaced");
      else if (!old.ready) remove(old, "stale");
      else servers.push(keep(old));
    }
  }

  // New members (and those whose old server went in an earlier run): not surge, but within the limits.
  for (const member of creates) {
    const group = freeGroup(Math.floor(member.placementSlot / groupSize), member.location);
    if (group === undefined || networkCount >= networkSize) {
      waiting.add(group === undefined ? "no spread group has room" : `the network holds ${networkSize} servers`);
      continue;
    }
    occupy(group, member.location);
    servers.push({ nodeId: member.nodeId, generation: member.generation, spreadGroup: group, action: "create", unprotect: false });
  }

  candidates.sort(brokenFirst);
  for (const { member, olds, oldReady: costsAvailability } of candidates) {
    const group = freeGroup(Math.floor(member.placementSlot / groupSize), member.location);
    const canSurge = surge < settings.maxSurge && group !== undefined && networkCount < networkSize;
    if (canSurge) {
      surge++;
      occupy(group, member.location);
      for (const old of olds) servers.push(keep(old));
      servers.push({ nodeId: member.nodeId, generation: member.generation, spreadGroup: group, action: "create", unprotect: false });
      replacing.push(member.nodeId);
    } else if (!costsAvailability || unavailable < settings.maxUnavailable) {
      if (costsAvailability) unavailable++;
      for (const old of olds) remove(old, costsAvailability ? "unavailable" : "stale");
      replacing.push(member.nodeId);
    } else {
      for (const old of olds) servers.push(keep(old));
      waiting.add(
        surge >= settings.maxSurge
          ? `maxSurge ${settings.maxSurge} reached`
          : group === undefined
            ? "no spread group has room"
            : `the network holds ${networkSize} servers`,
      );
    }
  }

  const slotOf = (nodeId: string) => wanted.get(nodeId)?.placementSlot ?? Number.MAX_SAFE_INTEGER;
  const order = (s: RolloutServer) => [slotOf(s.nodeId), s.nodeId, s.action === "keep" ? 0 : 1, s.generation] as const;
  servers.sort((a, b) => {
    const [x, y] = [order(a), order(b)];
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
  });
  const finished = (m: DesiredRolloutMember) =>
    servers.every((s) => s.nodeId !== m.nodeId || s.generation === m.generation) && servers.some((s) => s.nodeId === m.nodeId);
  return {
    servers,
    removals,
    remaining: members.filter((m) => !finished(m)).length,
    replacing,
    ...(waiting.size > 0 ? { waiting: [...waiting].sort().join("; ") } : {}),
  };
}

/**
 * Bare metal's default: Robot servers are fixed machines and an Elastic Metal member keeps its
 * machine until it is replaced, so nothing surges; one member at a time is drained and then
 * reinstalled, replaced or re-joined.
 */
export const DEFAULT_IN_PLACE_MAX_UNAVAILABLE = 1;

/** A bare-metal member at the start of this run: one machine, at the generation it was last installed or joined with. */
export interface CurrentInPlaceMember {
  readonly nodeId: string;
  readonly generation: string;
  /** Its Node is registered and Ready. */
  readonly ready: boolean;
}

/** How a member is declared this run. */
export interface InPlaceRolloutStep {
  readonly nodeId: string;
  /** The generation it is declared at: the wanted one, or its previous one for `retain`. */
  readonly generation: string;
  /**
   * `install`: a new member; `keep`: it runs its wanted generation already; `update`: it is drained,
   * then reinstalled, replaced or re-joined at its wanted generation this run; `retain`: it keeps
   * its previous generation until a later run.
   */
  readonly action: "install" | "keep" | "update" | "retain";
}

export interface InPlaceRolloutPlan {
  /** Every wanted member, in slot order. */
  readonly members: readonly InPlaceRolloutStep[];
  /** Members that left the pool (their machine is no longer declared). */
  readonly removals: readonly { readonly nodeId: string; readonly generation: string }[];
  /** Members this run updates (drained first), broken ones first. */
  readonly updating: readonly string[];
  /** Members still on a previous generation once this run ends. */
  readonly remaining: number;
  /** Why no further member could start this run, when some wait; absent when nothing waits. */
  readonly waiting?: string;
}

/**
 * The rollout step of a pool whose members change in place (one machine each, no surge): at most
 * `maxUnavailable` members without a Ready Node once the run's updates start, counting members that
 * were not Ready already; a member that is not Ready costs nothing to update and goes first. Like
 * planRollout with maxSurge 0, except that a member's update is one step (drain, then reinstall or
 * re-join) instead of a removal and a later creation. Deterministic in its inputs.
 */
export function planInPlaceRollout(
  desired: readonly DesiredRolloutMember[],
  current: readonly CurrentInPlaceMember[],
  maxUnavailable: number = DEFAULT_IN_PLACE_MAX_UNAVAILABLE,
): InPlaceRolloutPlan {
  assertRolloutSettings({ maxSurge: 0, maxUnavailable });
  const running = new Map<string, CurrentInPlaceMember>();
  for (const c of current) {
    if (running.has(c.nodeId))
      throw new Error(`member ${c.nodeId} is recorded twice among the current members; a bare-metal member has one machine`);
    running.set(c.nodeId, c);
  }
  const members = [...desired].sort(bySlot);
  const wanted = new Set(members.map((m) => m.nodeId));
  const steps = new Map<string, InPlaceRolloutStep>();
  const candidates: Array<{ member: DesiredRolloutMember; previous: CurrentInPlaceMember; oldReady: boolean }> = [];
  let unavailable = 0;
  for (const member of members) {
    const previous = running.get(member.nodeId);
    if (previous === undefined) steps.set(member.nodeId, { nodeId: member.nodeId, generation: member.generation, action: "install" });
    else {
      if (!previous.ready) unavailable++;
      if (previous.generation === member.generation)
        steps.set(member.nodeId, { nodeId: member.nodeId, generation: member.generation, action: "keep" });
      else candidates.push({ member, previous, oldReady: previous.ready });
    }
  }
  const updating: string[] = [];
  for (const { member, previous, oldReady: costsAvailability } of candidates.sort(brokenFirst)) {
    if (!costsAvailability || unavailable < maxUnavailable) {
      if (costsAvailability) unavailable++;
      steps.set(member.nodeId, { nodeId: member.nodeId, generation: member.generation, action: "update" });
      updating.push(member.nodeId);
    } else {
      steps.set(member.nodeId, { nodeId: member.nodeId, generation: previous.generation, action: "retain" });
    }
  }
  const planned = members.map((m) => steps.get(m.nodeId) as InPlaceRolloutStep);
  const remaining = planned.filter((s) => s.action === "retain").length;
  return {
    members: planned,
    removals: current
      .filter((c) => !wanted.has(c.nodeId))
      .map((c) => ({ nodeId: c.nodeId, generation: c.generation }))
      .sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0)),
    updating,
    remaining,
    ...(remaining > 0 ? { waiting: `maxUnavailable ${maxUnavailable} reached` } : {}),
  };
}

/**
 * How a bare-metal member reaches its new generation: a Robot reinstall, an Elastic Metal server
 * replaced in place, a re-run of the join (a version upgrade), or (Elastic Metal on kubeadm) a
 * re-push of the kubelet config, which restarts the kubelet.
 */
export type InPlaceChange = "reinstall" | "replace" | "re-join" | "kubelet-config";

/** Every InPlaceChange, in the order `nodefleet preview` lists them. */
export const IN_PLACE_CHANGES: readonly InPlaceChange[] = ["reinstall", "replace", "re-join", "kubelet-config"];

/** What a run did to a bare-metal pool's rollout: the stack output `rollout` and `nodefleet preview` report it. */
export interface InPlaceRolloutSummary {
  readonly pool: string;
  /** Tells it from a Hetzner Cloud pool's summary (which surges). */
  readonly inPlace: true;
  /** Members this run drains and then updates, with how. */
  readonly updating: readonly { readonly nodeId: string; readonly change: InPlaceChange }[];
  /** Members still on a previous generation after this run. */
  readonly remaining: number;
  /** Why more could not start this run. */
  readonly waiting?: string;
}

/** The summary of `plan` for `pool`; `changeOf` says how an updated member changes. */
export function inPlaceRolloutSummary(
  pool: string,
  plan: InPlaceRolloutPlan,
  changeOf: (nodeId: string) => InPlaceChange,
): InPlaceRolloutSummary {
  return {
    pool,
    inPlace: true,
    updating: plan.updating.map((nodeId) => ({ nodeId, change: changeOf(nodeId) })),
    remaining: plan.remaining,
    ...(plan.waiting ? { waiting: plan.waiting } : {}),
  };
}
