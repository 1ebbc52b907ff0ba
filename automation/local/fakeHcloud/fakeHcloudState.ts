/**
 * The fake Hetzner Cloud's state: servers, actions and the other collections with the API's own
 * field names, persisted atomically in the data directory so a restarted local cloud keeps its
 * machines. A server's status follows its actions: an action may carry the status the server takes
 * when it finishes (create -> off -> running, poweroff -> off, ...), applied on the next read.
 */
import { existsSync, readFileSync } from "node:fs";
import { writeFileAtomic } from "../../simulated/simulatedCloud";

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

export class FakeHcloudState {
  private state: Persisted;

  constructor(private readonly file: string) {
    this.state = existsSync(file)
      ? migrated(JSON.parse(readFileSync(file, "utf8")) as Persisted)
      : { nextId: 1000, servers: [], actions: [] };
  }

  private save(): void {
    writeFileAtomic(this.file, JSON.stringify(this.state));
  }

  newId(): number {
    this.state.nextId += 1;
    return this.state.nextId;
  }

  /** Applies the server statuses of actions finished by now. */
  private settle(): void {
    const now = Date.now();
    const due = this.state.actions.filter((a) => a.serverStatus && a.finishesAt <= now).sort((a, b) => a.finishesAt - b.finishesAt);
    for (const action of due) {
      const { server: id, status } = action.serverStatus!;
      if (status === "removed") this.state.servers = this.state.servers.filter((s) => s.id !== id);
      else {
        const server = this.state.servers.find((s) => s.id === id);
        if (server) server.status = status;
      }
      delete action.serverStatus;
    }
    if (due.length > 0) this.save();
  }

  get servers(): readonly FakeServer[] {
    this.settle();
    return this.state.servers;
  }

  server(id: number): FakeServer | undefined {
    this.settle();
    return this.state.servers.find((s) => s.id === id);
  }

  addServer(server: FakeServer): void {
    this.state.servers.push(server);
    this.save();
  }

  /** Changes fields of a server (which must exist). */
  updateServer(id: number, change: Partial<Omit<FakeServer, "id">>): FakeServer {
    const server = this.server(id)!;
    Object.assign(server, change);
    this.save();
    return server;
  }

  removeServer(id: number): void {
    this.state.servers = this.state.servers.filter((s) => s.id !== id);
    this.save();
  }

  objects(kind: string): readonly FakeObject[] {
    return this.state.objects?.[kind] ?? [];
  }

  /** Adds or replaces (by id) an object of `kind`, keeping the collection's order. */
  putObject(kind: string, object: FakeObject): void {
    const objects = (this.state.objects ??= {});
    const list = objects[kind] ?? [];
    const at = list.findIndex((o) => o.id === object.id);
    objects[kind] = at < 0 ? [...list, object] : list.map((o, i) => (i === at ? object : o));
    this.save();
  }

  removeObject(kind: string, id: number): void {
    const objects = (this.state.objects ??= {});
    objects[kind] = (objects[kind] ?? []).filter((o) => o.id !== id);
    this.save();
  }

  get actions(): readonly FakeAction[] {
    return this.state.actions;
  }

  action(id: number): FakeAction | undefined {
    return this.state.actions.find((a) => a.id === id);
  }

  /** Actions touching a resource that have not finished yet. */
  runningActionsOn(type: string, id: number): FakeAction[] {
    const now = Date.now();
    return this.state.actions.filter((a) => a.finishesAt > now && a.resources.some((r) => r.type === type && r.id === id));
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
    this.state.actions.push(action);
    if (this.state.actions.length > KEPT_ACTIONS) this.settleAndForgetOldest();
    this.save();
    return action;
  }

  private settleAndForgetOldest(): void {
    this.settle();
    const now = Date.now();
    const excess = this.state.actions.length - KEPT_ACTIONS;
    let dropped = 0;
    this.state.actions = this.state.actions.filter((a) => (dropped < excess && a.finishesAt <= now ? (dropped++, false) : true));
  }
}
