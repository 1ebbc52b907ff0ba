/**
 * The local cloud's machines: for every running fake server, the node agent does what cloud-init and
 * the kubelet would do with its user data (read the join token and kubelet flags, TLS-bootstrap,
 * register the Node), then keeps the Node Ready with heartbeats and runs its pods (kubeletPods.ts).
 * A machine whose join script waits for its private address (nodeIp.ts) joins only once the fake
 * shows it the private interface (hot-plugged after the create: NODEFLEET_SIM_PRIVATE_NIC_DELAY_MS),
 * and fails as the script does when it does not come within the script's wait.
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
import type { KubeIdentity } from "./kubeClient";
import { KubeletJoinError, type NodeStatusResources, joinAsKubelet, reportReady } from "./kubeletBootstrap";
import { syncNodePods } from "./kubeletPods";
import { UserDataError, readK0sWorkerUserData } from "./workerUserDataReader";
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
  /** The kubelet's `--node-ip`, reported as the Node's InternalIP. */
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
}

export class NodeAgent {
  private readonly machines = new Map<number, Machine>();
  /** When each machine was first seen running: its join script's node-IP wait counts from then. */
  private readonly bootedAt = new Map<number, number>();
  private timer?: NodeJS.Timeout;
  private ticking = false;
  private readonly intervalMs: number;
  private readonly stateDir: string | undefined;

  constructor(
    private readonly servers: () => readonly FakeServer[],
    private readonly logger: NodeAgentLogger,
    options: NodeAgentOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 2000;
    this.stateDir = options.stateDir;
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

  /** One pass: join new running servers, heartbeat joined ones, forget deleted ones. */
  async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const current = new Map(this.servers().map((s) => [s.id, s]));
      for (const [id, machine] of this.machines) {
        if (!current.has(id)) {
          this.machines.delete(id);
          this.bootedAt.delete(id);
          this.eraseDisk(id);
          if (machine.state === "joined") this.logger.info({ serverId: id, node: machine.nodeName }, "server deleted: its kubelet stops");
        }
      }
      await Promise.all(
        [...current.values()].map(async (server) => {
          const machine = this.machines.get(server.id);
          if (server.status !== "running" || machine?.state === "joining" || machine?.state === "refused") return;
          const joined = machine?.state === "joined" ? machine : this.resume(server);
          if (joined) {
            await reportReady(joined.identity, joined.nodeName, joined.resources, joined.kubeletVersion, joined.nodeIp).catch(
              (error: Error) => this.logger.warn({ serverId: server.id, err: error.message }, "heartbeat failed"),
            );
            await syncNodePods(joined.identity, joined.nodeName).catch((error: Error) =>
              this.logger.warn({ serverId: server.id, err: error.message }, "pod sync failed"),
            );
            return;
          }
          await this.join(server);
        }),
      );
    } finally {
      this.ticking = false;
    }
  }

  private async join(server: FakeServer): Promise<void> {
    this.machines.set(server.id, { state: "joining" });
    try {
      const { nodeIpWait, ...intent } = readK0sWorkerUserData(server.userData);
      const nodeIp = nodeIpWait ? this.privateAddress(server, nodeIpWait) : undefined;
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
      this.writeDisk(server, joined);
      this.logger.info({ serverId: server.id, server: server.name, node: intent.hostname, providerID: intent.providerID }, "node joined");
    } catch (error) {
      const reason = (error as Error).message;
      if (error instanceof KubeletJoinError && error.transient) {
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
