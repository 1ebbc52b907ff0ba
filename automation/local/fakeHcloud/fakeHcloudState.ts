/**
 * The fake Hetzner Cloud's state: servers, actions and the other collections with the API's own
 * field names, persisted in the data directory (a snapshot and a journal of changes,
 * fakeHcloudJournal.ts) so a restarted local cloud keeps its machines. A server's status follows
 * its actions: an action may carry the status the server takes when it finishes (create -> off ->
 * running, poweroff -> off, ...), applied on the next read.
 */
import { FakeHcloudJournal } from "./fakeHcloudJournal";

export type FakeServerStatus =
  "initializing" | "starting" | "running" | "stopping" | "off" | "deleting" | "migrating" | "rebuilding" | "unknown";

/** A server's attachment to a private network. */
export interface FakePrivateNet {
  network: number;
  ip: string;
  alias_ips: string[];
  mac_address: string;
}

export interface FakeServer {
  id: number;
  name: string;
  status: FakeServerStatus;
  created: string;
  labels: Record<string, string>;
  serverType: string;
  location: string;
  image: string;
  userData: string;
  ipv4: string | null;
  ipv6: string | null;
  privateNets: FakePrivateNet[];
  /**
   * When the machine sees each network's private interface (epoch ms, by network id), for networks
   * attached after the create: the NIC is hot-plugged. Absent: there from boot. Not API fields.
   */
  nicsUpAt?: Record<string, number>;
  placementGroup: number | null;
  deleteProtection: boolean;
  rebuildProtection: boolean;
}

export interface FakeAction {
  id: number;
  command: string;
  resources: Array<{ id: number; type: string }>;
  started: string;
  /** Epoch ms at which the action completes. */
  finishesAt: number;
  /** The status its server takes once the action completes ("removed": the server is gone). */
  serverStatus?: { server: number; status: FakeServerStatus | "removed" };
  /** Set when the action fails (it ends with status `error`). */
  error?: { code: string; message: string };
}

/** A network, firewall, placement group or SSH key: its API fields, kept as the API returns them. */
export interface FakeObject {
  id: number;
  name: string;
  labels: Record<string, string>;
  created: string;
  [field: string]: unknown;
}

interface Persisted {
  nextId: number;
  servers: FakeServer[];
  actions: FakeAction[];
  objects?: Record<string, FakeObject[]>;
}

/** Finished actions kept for `GET /actions` (older ones are forgotten, keeping the file small). */
const KEPT_ACTIONS = 5000;
/** How many actions beyond KEPT_ACTIONS accumulate before the oldest are forgotten at once. */
const FORGET_BATCH = 500;

/** State files written before servers carried their private IPs and firewalls lived on firewalls. */
function migrated(state: Persisted): Persisted {
  for (const server of state.servers as Array<FakeServer & { networks?: number[]; firewalls?: number[] }>) {
    if (!server.privateNets)
      server.privateNets = (server.networks ?? []).map((network, i) => ({
        network,
        ip: `10.0.1.${(server.id % 250) + 2 + i}`,
        alias_ips: [],
        mac_address: macAddress(server.id, i),
      }));
    server.ipv6 ??= null;
    delete server.networks;
    delete server.firewalls;
  }
  return state;
}

/** A stable, locally administered MAC address per server and attachment. */
export function macAddress(serverId: number, attachment: number): string {
  const bytes = [0x86, 0x00, (serverId >> 16) & 0xff, (serverId >> 8) & 0xff, serverId & 0xff, attachment & 0xff];
  return bytes.map((b) => b.toString(16).padStart(2, "0")).join(":");
}

/** One change, as the journal records it: a server, object or action put (whole) or removed. */
type JournalEntry =
  | { server: FakeServer }
  | { removeServer: number }
  | { kind: string; object: FakeObject }
  | { kind: string; removeObject: number }
  | { action: FakeAction };

/**
 * The state, indexed so that a request costs the same whatever the number of servers: servers by id
 * and by name, actions by id and by the resources they touch, and the actions whose server status
 * is still to be applied kept apart.
 */
export class FakeHcloudState {
  private nextId: number;
  private readonly serversById = new Map<number, FakeServer>();
  private readonly serverIdsByName = new Map<string, number>();
  /** The servers in creation order, rebuilt only after a server was added or removed. */
  private serverList: FakeServer[] | undefined;
  private actionList: FakeAction[] = [];
  private readonly actionsById = new Map<number, FakeAction>();
  private readonly actionsByResource = new Map<string, FakeAction[]>();
  /** Actions carrying a server status not applied yet. */
  private pending: FakeAction[] = [];
  private readonly objectsByKind: Record<string, FakeObject[]>;
  private readonly journal: FakeHcloudJournal;

  constructor(file: string) {
    this.journal = new FakeHcloudJournal(file);
    const { snapshot, entries } = this.journal.load<JournalEntry>();
    const persisted = snapshot === undefined ? { nextId: 1000, servers: [], actions: [] } : migrated(JSON.parse(snapshot) as Persisted);
    this.nextId = persisted.nextId;
    this.objectsByKind = persisted.objects ?? {};
    for (const server of persisted.servers) this.indexServer(server);
    for (const action of persisted.actions) this.indexAction(action);
    for (const entry of entries) this.apply(entry);
    this.forgetOldActions();
    // A restart starts from one snapshot (and an empty journal).
    if (entries.length > 0) this.compact();
  }

  /** How many times the whole state was written since this fake started. */
  get snapshotWrites(): number {
    return this.journal.snapshotWrites;
  }

  /** Folds the journal into a new snapshot (also done as the journal grows; the fake calls it on close). */
  compact(): void {
    const persisted: Persisted = { nextId: this.nextId, servers: this.servers as FakeServer[], actions: this.actionList };
    if (Object.keys(this.objectsByKind).length > 0) persisted.objects = this.objectsByKind;
    this.journal.compact(JSON.stringify(persisted));
  }

  private record(entry: JournalEntry): void {
    if (this.journal.append(entry)) this.compact();
  }

  /** Replays one journal entry. Ids it carries move nextId past them (an id handed out and unused is not reused either). */
  private apply(entry: JournalEntry): void {
    if ("server" in entry) {
      this.nextId = Math.max(this.nextId, entry.server.id);
      this.indexServer(entry.server);
    } else if ("removeServer" in entry) this.unindexServer(entry.removeServer);
    else if ("object" in entry) {
      this.nextId = Math.max(this.nextId, entry.object.id);
      this.replaceObject(entry.kind, entry.object);
    } else if ("removeObject" in entry)
      this.objectsByKind[entry.kind] = (this.objectsByKind[entry.kind] ?? []).filter((o) => o.id !== entry.removeObject);
    else if ("action" in entry) {
      this.nextId = Math.max(this.nextId, entry.action.id);
      this.indexAction(entry.action);
    }
  }

  private indexServer(server: FakeServer): void {
    const previous = this.serversById.get(server.id);
    if (previous) this.serverIdsByName.delete(previous.name);
    else this.serverList = undefined;
    this.serversById.set(server.id, server);
    this.serverIdsByName.set(server.name, server.id);
  }

  private unindexServer(id: number): void {
    const server = this.serversById.get(id);
    if (!server) return;
    this.serversById.delete(id);
    if (this.serverIdsByName.get(server.name) === id) this.serverIdsByName.delete(server.name);
    this.serverList = undefined;
  }

  /** Adds an action, or replaces the one with its id (a replayed change of it). */
  private indexAction(action: FakeAction): void {
    const previous = this.actionsById.get(action.id);
    this.actionsById.set(action.id, action);
    if (previous) {
      this.actionList[this.actionList.indexOf(previous)] = action;
      for (const r of action.resources) {
        const list = this.actionsByResource.get(`${r.type}/${r.id}`)!;
        list[list.indexOf(previous)] = action;
      }
      this.pending = this.pending.filter((a) => a !== previous);
    } else {
      this.actionList.push(action);
      for (const r of action.resources) {
        const key = `${r.type}/${r.id}`;
        const list = this.actionsByResource.get(key);
        if (list) list.push(action);
        else this.actionsByResource.set(key, [action]);
      }
    }
    if (action.serverStatus) this.pending.push(action);
  }

  newId(): number {
    this.nextId += 1;
    return this.nextId;
  }

  /** Applies the server statuses of actions finished by now. */
  private settle(): void {
    if (this.pending.length === 0) return;
    const now = Date.now();
    const due = this.pending.filter((a) => a.finishesAt <= now).sort((a, b) => a.finishesAt - b.finishesAt);
    if (due.length === 0) return;
    this.pending = this.pending.filter((a) => a.finishesAt > now);
    for (const action of due) {
      const { server: id, status } = action.serverStatus!;
      delete action.serverStatus;
      if (status === "removed") {
        if (this.serversById.has(id)) {
          this.unindexServer(id);
          this.record({ removeServer: id });
        }
      } else {
        const server = this.serversById.get(id);
        if (server) {
          server.status = status;
          this.record({ server });
        }
      }
      this.record({ action });
    }
  }

  get servers(): readonly FakeServer[] {
    this.settle();
    this.serverList ??= [...this.serversById.values()].sort((a, b) => a.id - b.id);
    return this.serverList;
  }

  server(id: number): FakeServer | undefined {
    this.settle();
    return this.serversById.get(id);
  }

  serverByName(name: string): FakeServer | undefined {
    this.settle();
    const id = this.serverIdsByName.get(name);
    return id === undefined ? undefined : this.serversById.get(id);
  }

  addServer(server: FakeServer): void {
    this.indexServer(server);
    this.record({ server });
  }

  /** Changes fields of a server (which must exist). */
  updateServer(id: number, change: Partial<Omit<FakeServer, "id">>): FakeServer {
    const server = this.server(id)!;
    if (change.name !== undefined && change.name !== server.name) {
      this.serverIdsByName.delete(server.name);
      this.serverIdsByName.set(change.name, id);
    }
    Object.assign(server, change);
    this.record({ server });
    return server;
  }

  removeServer(id: number): void {
    this.unindexServer(id);
    this.record({ removeServer: id });
  }

  objects(kind: string): readonly FakeObject[] {
    return this.objectsByKind[kind] ?? [];
  }

  private replaceObject(kind: string, object: FakeObject): void {
    const list = this.objectsByKind[kind] ?? [];
    const at = list.findIndex((o) => o.id === object.id);
    this.objectsByKind[kind] = at < 0 ? [...list, object] : list.map((o, i) => (i === at ? object : o));
  }

  /** Adds or replaces (by id) an object of `kind`, keeping the collection's order. */
  putObject(kind: string, object: FakeObject): void {
    this.replaceObject(kind, object);
    this.record({ kind, object });
  }

  removeObject(kind: string, id: number): void {
    this.objectsByKind[kind] = (this.objectsByKind[kind] ?? []).filter((o) => o.id !== id);
    this.record({ kind, removeObject: id });
  }

  get actions(): readonly FakeAction[] {
    return this.actionList;
  }

  action(id: number): FakeAction | undefined {
    return this.actionsById.get(id);
  }

  /** The kept actions touching a resource, oldest first. */
  actionsOn(type: string, id: number): readonly FakeAction[] {
    return this.actionsByResource.get(`${type}/${id}`) ?? [];
  }

  /** Actions touching a resource that have not finished yet. */
  runningActionsOn(type: string, id: number): FakeAction[] {
    const now = Date.now();
    return this.actionsOn(type, id).filter((a) => a.finishesAt > now);
  }

  addAction(
    command: string,
    resources: FakeAction["resources"],
    durationMs: number,
    outcome: Pick<FakeAction, "serverStatus" | "error"> = {},
  ): FakeAction {
    const action: FakeAction = {
      id: this.newId(),
      command,
      resources,
      started: new Date().toISOString(),
      finishesAt: Date.now() + durationMs,
      ...outcome,
    };
    this.indexAction(action);
    this.record({ action });
    // Forgotten in batches, so that a long-lived fake does not scan its actions on every create.
    if (this.actionList.length > KEPT_ACTIONS + FORGET_BATCH) {
      this.settle();
      this.forgetOldActions();
    }
    return action;
  }

  /** Forgets the oldest finished actions beyond KEPT_ACTIONS (unfinished ones stay). */
  private forgetOldActions(): void {
    const excess = this.actionList.length - KEPT_ACTIONS;
    if (excess <= 0) return;
    const now = Date.now();
    let dropped = 0;
    const forgotten = new Set<FakeAction>();
    this.actionList = this.actionList.filter((a) => {
      if (dropped < excess && a.finishesAt <= now && !a.serverStatus) {
        dropped++;
        forgotten.add(a);
        return false;
      }
      return true;
    });
    for (const action of forgotten) {
      this.actionsById.delete(action.id);
      for (const r of action.resources) {
        const key = `${r.type}/${r.id}`;
        const kept = (this.actionsByResource.get(key) ?? []).filter((a) => !forgotten.has(a));
        if (kept.length > 0) this.actionsByResource.set(key, kept);
        else this.actionsByResource.delete(key);
      }
    }
  }
}
