/**
 * The local cloud's machines: for every running fake server, the node agent does what cloud-init and
 * the kubelet would do with its user data (read the join token and kubelet flags, TLS-bootstrap,
 * register the Node), then keeps the Node Ready with heartbeats (its Lease, kubeletLease.ts) and runs
 * its pods (kubeletPods.ts), all machines' work batched in one pass (NodeAgent below).
 * A machine whose join script waits for its private address (nodeIp.ts) joins only once the fake
 * shows it the private interface (hot-plugged after the create: NODEFLEET_SIM_PRIVATE_NIC_DELAY_MS),
 * and fails as the script does when it does not come within the script's wait. A machine without
 * public IPv4 joins only when its user data routes its default through the private network and the
 * network routes 0.0.0.0/0 to a NAT gateway (docs/networking.md); it registers its private address.
 * A deleted server stops its heartbeats and leaves its Node to nodefleet's Node removal; user data
 * that could not join in reality yields no Node and one log line saying why. A joined machine keeps
 * its kubelet identity in a file per server in the state directory, so a restarted local cloud
 * resumes its heartbeats instead of joining again with tokens since deleted or expired.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { kubeletSchema } from "../../components/fleet/fleetSpec";
import { allocatable, formatResources, nodeCapacity, nodeOverheadFor } from "../catalog/instanceTypes";
import { findServerType, shippedCatalog } from "../catalog/serverTypes";
import { KubeApiError, type KubeIdentity, kube } from "./kubeClient";
import { KubeletJoinError, type NodeStatusResources, joinAsKubelet, reportReady } from "./kubeletBootstrap";
import { renewNodeLease } from "./kubeletLease";
import { type BoundPod, podNeedsKubelet, syncNodePods, syncPods } from "./kubeletPods";
import { UserDataError, readK0sWorkerUserData, withServerId } from "./workerUserDataReader";
import { fakeMetadataUrl } from "./fakeHcloud/fakeHcloudMetadata";
import { cidrContainsAddress, parseIpv4Cidr } from "../../components/shared/cidr";
import type { FakeServer } from "./fakeHcloud/fakeHcloudState";

export interface NodeAgentLogger {
  info(record: object, message: string): void;
  warn(record: object, message: string): void;
}

/**
 * What the server's kubelet would report: the capacity and allocatable the scaling API computes for
 * its type, so Karpenter's view and the Node agree. The agent assumes the default kubelet settings
 * (the user data's reservations are not read back).
 */
function serverTypeResources(serverType: string): NodeStatusResources | undefined {
  const type = findServerType(shippedCatalog(), serverType);
  if (!type) return undefined;
  const kubelet = kubeletSchema.parse({});
  const capacity = nodeCapacity(type, kubelet);
  return { capacity: formatResources(capacity), allocatable: formatResources(allocatable(capacity, nodeOverheadFor(type, kubelet))) };
}

interface JoinedMachine {
  readonly state: "joined";
  readonly nodeName: string;
  readonly identity: KubeIdentity;
  readonly resources?: NodeStatusResources;
  readonly kubeletVersion: string;
  /** The Node's InternalIP: the kubelet's `--node-ip`, or without one the server's public IPv4. */
  readonly nodeIp?: string;
}

type Machine = { readonly state: "joining" } | JoinedMachine | { readonly state: "refused"; readonly reason: string };

/** What a joined machine keeps on its disk: its identity, and which server it is (ids of a reset fake cloud start over). */
interface MachineDisk {
  readonly serverName: string;
  readonly serverCreated: string;
  readonly machine: JoinedMachine;
}

function readDisk(file: string): MachineDisk | undefined {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as MachineDisk;
  } catch {
    return undefined;
  }
}

export interface NodeAgentOptions {
  /** Pass interval. Default 2 s. */
  readonly intervalMs?: number;
  /** Where joined machines keep their kubelet identities (private keys: mode 0600); none: in memory only. */
  readonly stateDir?: string;
  /**
   * An identity that may list every Node and Pod (the control plane's admin): the agent then reads
   * them with one list a pass instead of one request per machine. The writes stay the machines' own.
   */
  readonly cluster?: KubeIdentity;
  /** How often a machine renews its Lease. Default 10 s (the kubelet's: a quarter of 40 s). */
  readonly leaseRenewMs?: number;
  /** How often the Nodes' status is read back and reported again where it is not Ready. Default 10 s (the kubelet's nodeStatusUpdateFrequency). */
  readonly statusCheckMs?: number;
  /** Requests of the heartbeat work in flight at once, all machines together. Default 16. */
  readonly concurrency?: number;
  /** Joins in progress at once. Default 8. */
  readonly joinConcurrency?: number;
  /**
   * The fake Hetzner API's address: machines whose user data reads the metadata service
   * (169.254.169.254) read it there, as themselves (fakeHcloud/fakeHcloudMetadata.ts). Without it
   * such a machine's join is refused, as a server cut off from the service would fail.
   */
  readonly metadataAddress?: string;
  /** The clock (tests). */
  readonly now?: () => number;
  /**
   * A network's routes (the fake's): a machine without public IPv4 reaches its API server and
   * downloads only through a route 0.0.0.0/0 of a network it is on. Default: no network routes anything.
   */
  readonly networkRoutes?: (networkId: number) => ReadonlyArray<{ readonly destination: string; readonly gateway: string }>;
}

/** The metadata service did not answer (yet): the join script's curl retries, so the next pass does. */
class MetadataReadError extends Error {
  override readonly name = "MetadataReadError";
}

/** A kubelet reports its status, even unchanged, this often (its nodeStatusReportFrequency). */
const STATUS_REPORT_MS = 5 * 60_000;

/** What the agent keeps per joined machine between passes. */
interface Heartbeat {
  /** When its Lease was last renewed (0: due). */
  lease: number;
  /** Its status is to be reported on the next pass (just joined or resumed, or found not Ready). */
  statusDue: boolean;
  /** Its Node was found deleted: its kubelet keeps running but has nothing to report to. */
  nodeGone: boolean;
}

/** Runs at most `limit` of the calls at once, in order. */
function limiter(limit: number): <T>(run: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (run) => {
    if (active >= limit) await new Promise<void>((resume) => waiting.push(resume));
    active++;
    try {
      return await run();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

interface ListedNode {
  metadata: { name: string };
  status?: { conditions?: Array<{ type: string; status: string; lastHeartbeatTime?: string }> };
}

/**
 * All machines share one timer and one pass: each pass renews the Leases that are due, reads the
 * Nodes and the bound Pods with one list each (given `cluster`), and writes only where something
 * is to be done, with a bounded number of requests in flight over kept-alive connections
 * (kubeClient.ts). What a pass costs thus grows with the work due, not with a loop per machine.
 */
export class NodeAgent {
  private readonly machines = new Map<number, Machine>();
  private readonly heartbeats = new Map<number, Heartbeat>();
  /** When each machine was first seen running: its join script's node-IP wait counts from then. */
  private readonly bootedAt = new Map<number, number>();
  private timer?: NodeJS.Timeout;
  private beating = false;
  private lastStatusCheck = Number.NEGATIVE_INFINITY;
  private readonly intervalMs: number;
  private readonly stateDir: string | undefined;
  private readonly metadataAddress: string | undefined;
  private readonly cluster: KubeIdentity | undefined;
  private readonly leaseRenewMs: number;
  private readonly statusCheckMs: number;
  private readonly now: () => number;
  private readonly networkRoutes: NonNullable<NodeAgentOptions["networkRoutes"]>;
  private readonly request: <T>(run: () => Promise<T>) => Promise<T>;
  private readonly joining: <T>(run: () => Promise<T>) => Promise<T>;

  constructor(
    private readonly servers: () => readonly FakeServer[],
    private readonly logger: NodeAgentLogger,
    options: NodeAgentOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 2000;
    this.metadataAddress = options.metadataAddress;
    this.stateDir = options.stateDir;
    this.cluster = options.cluster;
    this.leaseRenewMs = options.leaseRenewMs ?? 10_000;
    this.statusCheckMs = options.statusCheckMs ?? 10_000;
    this.now = options.now ?? Date.now;
    this.networkRoutes = options.networkRoutes ?? (() => []);
    this.request = limiter(options.concurrency ?? 16);
    this.joining = limiter(options.joinConcurrency ?? 8);
  }

  /** The machine behind a server id (for tests and `local` status output). */
  machine(serverId: number): Machine | undefined {
    return this.machines.get(serverId);
  }

  start(): void {
    this.forgetDeletedDisks();
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    void this.tick();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * One pass: forget deleted servers, resume or join new running ones, and the heartbeat work that
   * is due. Resolves once the joins it started are done. A pass whose heartbeat work is still
   * running when the next one starts is not doubled; joins go on across passes.
   */
  async tick(): Promise<void> {
    const current = new Map(this.servers().map((s) => [s.id, s]));
    for (const [id, machine] of this.machines) {
      if (!current.has(id)) {
        this.machines.delete(id);
        this.heartbeats.delete(id);
        this.bootedAt.delete(id);
        this.eraseDisk(id);
        if (machine.state === "joined") this.logger.info({ serverId: id, node: machine.nodeName }, "server deleted: its kubelet stops");
      }
    }
    const joins: FakeServer[] = [];
    for (const server of current.values()) {
      if (server.status !== "running" || this.machines.has(server.id) || this.resume(server)) continue;
      // Marked now, so that the next pass does not start it again while it waits for its turn.
      this.machines.set(server.id, { state: "joining" });
      joins.push(server);
    }
    await Promise.all([this.heartbeat(current), ...joins.map((server) => this.joining(() => this.join(server)))]);
  }

  /** The machines that beat: joined, their server running and their Node not deleted. */
  private beatingMachines(current: ReadonlyMap<number, FakeServer>): Array<[number, JoinedMachine, Heartbeat]> {
    const out: Array<[number, JoinedMachine, Heartbeat]> = [];
    for (const [id, machine] of this.machines) {
      const beat = this.heartbeats.get(id);
      if (machine.state === "joined" && beat && !beat.nodeGone && current.get(id)?.status === "running") out.push([id, machine, beat]);
    }
    return out;
  }

  private async heartbeat(current: ReadonlyMap<number, FakeServer>): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    try {
      const machines = this.beatingMachines(current);
      if (machines.length === 0) return;
      const failures: string[] = [];
      const failed = (id: number, what: string) => (error: Error) => {
        failures.push(`${what} of server ${id}: ${error.message}`);
      };
      const now = this.now();
      const checkStatus = now - this.lastStatusCheck >= this.statusCheckMs;
      if (checkStatus) this.lastStatusCheck = now;
      await Promise.all([
        ...machines
          .filter(([, , beat]) => now - beat.lease >= this.leaseRenewMs)
          .map(([id, machine, beat]) => this.request(() => this.renewLease(id, machine, beat, now)).catch(failed(id, "Lease renewal"))),
        this.reportStatus(machines, checkStatus).catch((error: Error) => failures.push(`Node status: ${error.message}`)),
        this.syncPods(machines).catch((error: Error) => failures.push(`pod sync: ${error.message}`)),
      ]);
      // One line a pass, however many machines failed (an unreachable API server fails them all).
      if (failures.length > 0) this.logger.warn({ failures: failures.length, first: failures[0] }, "heartbeat work failed");
    } finally {
      this.beating = false;
    }
  }

  private async renewLease(id: number, machine: JoinedMachine, beat: Heartbeat, now: number): Promise<void> {
    const outcome = await renewNodeLease(machine.identity, machine.nodeName, new Date(now));
    if (outcome === "gone") return this.nodeGone(id, machine, beat);
    beat.lease = now;
  }

  private nodeGone(id: number, machine: JoinedMachine, beat: Heartbeat): void {
    if (beat.nodeGone) return;
    beat.nodeGone = true;
    // As a kubelet: it does not register its Node again while it runs.
    this.logger.warn({ serverId: id, node: machine.nodeName }, "the machine's Node was deleted: its kubelet has nothing to report to");
  }

  /**
   * Reports Ready for the machines whose status is due and, every statusCheckMs, for those whose
   * Node is not Ready (after an API server outage, say) or was last reported minutes ago.
   */
  private async reportStatus(machines: ReadonlyArray<[number, JoinedMachine, Heartbeat]>, check: boolean): Promise<void> {
    const listed = check ? await this.listNodes(machines) : undefined;
    const now = this.now();
    const due = machines.filter(([id, machine, beat]) => {
      if (beat.statusDue || !listed) return beat.statusDue;
      const node = listed.get(machine.nodeName);
      if (node === null) {
        this.nodeGone(id, machine, beat);
        return false;
      }
      const ready = node?.status?.conditions?.find((c) => c.type === "Ready");
      return ready?.status !== "True" || now - Date.parse(ready.lastHeartbeatTime ?? "") >= STATUS_REPORT_MS;
    });
    await Promise.all(
      due.map(([, machine, beat]) =>
        this.request(async () => {
          await reportReady(machine.identity, machine.nodeName, machine.resources, machine.kubeletVersion, machine.nodeIp);
          beat.statusDue = false;
        }),
      ),
    );
  }

  /** The machines' Nodes by name (null: deleted), with one list given `cluster`, else one read each. */
  private async listNodes(machines: ReadonlyArray<[number, JoinedMachine, Heartbeat]>): Promise<Map<string, ListedNode | null>> {
    const byName = new Map<string, ListedNode | null>();
    if (this.cluster) {
      // From the API server's watch cache (resourceVersion=0): the read costs it no etcd round trip.
      const nodes = (await this.request(() => kube(this.cluster!, "GET", "/api/v1/nodes?resourceVersion=0"))) as { items: ListedNode[] };
      for (const node of nodes.items) byName.set(node.metadata.name, node);
      for (const [, machine] of machines) if (!byName.has(machine.nodeName)) byName.set(machine.nodeName, null);
      return byName;
    }
    await Promise.all(
      machines.map(([, machine]) =>
        this.request(async () => {
          try {
            byName.set(machine.nodeName, (await kube(machine.identity, "GET", `/api/v1/nodes/${machine.nodeName}`)) as ListedNode);
          } catch (error) {
            if (!(error instanceof KubeApiError && error.status === 404)) throw error;
            byName.set(machine.nodeName, null);
          }
        }),
      ),
    );
    return byName;
  }

  /** Starts and finishes the machines' pods: one list of every bound pod given `cluster`, writes only for pods with work. */
  private async syncPods(machines: ReadonlyArray<[number, JoinedMachine, Heartbeat]>): Promise<void> {
    if (!this.cluster) {
      await Promise.all(machines.map(([, machine]) => this.request(() => syncNodePods(machine.identity, machine.nodeName))));
      return;
    }
    const selector = encodeURIComponent("spec.nodeName!=");
    const pods = (
      (await this.request(() => kube(this.cluster!, "GET", `/api/v1/pods?resourceVersion=0&fieldSelector=${selector}`))) as {
        items: BoundPod[];
      }
    ).items;
    const byNode = new Map<string, BoundPod[]>();
    for (const pod of pods.filter(podNeedsKubelet)) byNode.set(pod.spec.nodeName!, [...(byNode.get(pod.spec.nodeName!) ?? []), pod]);
    await Promise.all(
      machines
        .filter(([, machine]) => byNode.has(machine.nodeName))
        .map(([, machine]) => this.request(() => syncPods(machine.identity, byNode.get(machine.nodeName)!))),
    );
  }

  private async join(server: FakeServer): Promise<void> {
    try {
      const { nodeIpWait, privateEgress, serverIdUrl, ...read } = readK0sWorkerUserData(server.userData);
      if (server.ipv4 === null && !this.reachesInternet(server, privateEgress)) {
        // As a kubelet whose API server and downloads are out of reach retries: the next pass tries again.
        this.machines.delete(server.id);
        return;
      }
      const intent = serverIdUrl
        ? { ...read, providerID: withServerId(read.providerID, await this.readMetadata(server, serverIdUrl)) }
        : read;
      // Without --node-ip a kubelet registers its default route's address: a Hetzner server's public IPv4.
      const nodeIp = nodeIpWait ? this.privateAddress(server, nodeIpWait) : (server.ipv4 ?? undefined);
      if (nodeIp === null) {
        this.machines.delete(server.id);
        return;
      }
      const resources = serverTypeResources(server.serverType);
      const identity = await joinAsKubelet({
        ...intent,
        nodeName: intent.hostname,
        ...(resources ? { resources } : {}),
        ...(nodeIp ? { nodeIp } : {}),
      });
      const joined: JoinedMachine = {
        state: "joined",
        nodeName: intent.hostname,
        identity,
        kubeletVersion: intent.kubeletVersion,
        ...(resources ? { resources } : {}),
        ...(nodeIp ? { nodeIp } : {}),
      };
      this.machines.set(server.id, joined);
      // The join reported its status: its Lease is next.
      this.heartbeats.set(server.id, { lease: 0, statusDue: false, nodeGone: false });
      this.writeDisk(server, joined);
      this.logger.info({ serverId: server.id, server: server.name, node: intent.hostname, providerID: intent.providerID }, "node joined");
    } catch (error) {
      const reason = (error as Error).message;
      if ((error instanceof KubeletJoinError && error.transient) || error instanceof MetadataReadError) {
        // As a kubelet retries while its API server is unreachable: the next pass tries again.
        this.machines.delete(server.id);
        this.logger.warn({ serverId: server.id, server: server.name, reason }, "joining failed for now; retrying");
        return;
      }
      this.machines.set(server.id, { state: "refused", reason });
      this.logger.warn({ serverId: server.id, server: server.name, reason }, "the server's user data cannot join the cluster");
    }
  }

  /**
   * Whether a machine without public IPv4 reaches the internet: its user data routes the default
   * through the private network (refused otherwise: it would never join) and a network it is on
   * routes 0.0.0.0/0 to a gateway (docs/networking.md; false while the route is missing).
   */
  private reachesInternet(server: FakeServer, privateEgress: { readonly gateway: string } | undefined): boolean {
    if (!privateEgress)
      throw new UserDataError(
        "the server has no public IPv4 and its user data routes nothing through the private network, so it cannot reach its API server or downloads",
      );
    return server.privateNets.some((p) => this.networkRoutes(p.network).some((r) => r.destination === "0.0.0.0/0"));
  }

  /**
   * A metadata document as the machine reads it (its join script's curl), from the fake. Transient
   * failures retry on the next pass, as curl's retries would; no fake address is a refusal.
   */
  private async readMetadata(server: FakeServer, url: string): Promise<string> {
    const fakeUrl = this.metadataAddress === undefined ? undefined : fakeMetadataUrl(this.metadataAddress, server.id, url);
    if (fakeUrl === undefined) throw new UserDataError(`the join script reads ${url}, which this machine cannot reach`);
    let response: Response;
    try {
      response = await fetch(fakeUrl, { signal: AbortSignal.timeout(10_000) });
    } catch (error) {
      throw new MetadataReadError(`reading ${url}: ${(error as Error).message}`);
    }
    const body = (await response.text()).trim();
    if (!response.ok) throw new MetadataReadError(`reading ${url}: HTTP ${response.status}`);
    return body;
  }

  /**
   * The machine's address in the join script's subnet, as `ip addr` would show it: null while the
   * private interface is not up yet (the script waits), an error once the script's wait is over.
   */
  private privateAddress(server: FakeServer, wanted: { subnet: string; waitSeconds: number }): string | null {
    const now = Date.now();
    const range = parseIpv4Cidr(wanted.subnet)!;
    const address = server.privateNets.find(
      (p) => (server.nicsUpAt?.[String(p.network)] ?? 0) <= now && cidrContainsAddress(range, p.ip),
    )?.ip;
    if (address) return address;
    const booted = this.bootedAt.get(server.id) ?? now;
    this.bootedAt.set(server.id, booted);
    const waited = Math.floor((now - booted) / 1000);
    if (waited >= wanted.waitSeconds)
      throw new UserDataError(
        `no address in the private subnet ${wanted.subnet} after ${waited}s, so the kubelet has no private --node-ip`,
      );
    return null;
  }

  private diskOf(serverId: number): string | undefined {
    return this.stateDir && join(this.stateDir, `${serverId}.json`);
  }

  private writeDisk(server: FakeServer, machine: JoinedMachine): void {
    const file = this.diskOf(server.id);
    if (!file) return;
    mkdirSync(this.stateDir!, { recursive: true, mode: 0o700 });
    const disk: MachineDisk = { serverName: server.name, serverCreated: server.created, machine };
    writeFileSync(file, JSON.stringify(disk), { mode: 0o600 });
  }

  /** The machine this server joined as before a restart, if its disk says so (and is this server's). */
  private resume(server: FakeServer): JoinedMachine | undefined {
    const file = this.diskOf(server.id);
    if (!file || !existsSync(file)) return undefined;
    const disk = readDisk(file);
    if (disk?.serverName !== server.name || disk.serverCreated !== server.created || disk.machine?.state !== "joined") {
      // Not this server's disk (or unreadable): the machine boots as new.
      this.eraseDisk(server.id);
      return undefined;
    }
    this.machines.set(server.id, disk.machine);
    this.heartbeats.set(server.id, { lease: 0, statusDue: true, nodeGone: false });
    this.logger.info({ serverId: server.id, node: disk.machine.nodeName }, "machine resumed with its kubelet identity");
    return disk.machine;
  }

  private eraseDisk(serverId: number): void {
    const file = this.diskOf(serverId);
    if (file) rmSync(file, { force: true });
  }

  /** Disks of servers deleted while the agent was stopped. */
  private forgetDeletedDisks(): void {
    if (!this.stateDir || !existsSync(this.stateDir)) return;
    const ids = new Set(this.servers().map((s) => `${s.id}.json`));
    for (const name of readdirSync(this.stateDir))
      if (name.endsWith(".json") && !ids.has(name)) rmSync(join(this.stateDir, name), { force: true });
  }
}
