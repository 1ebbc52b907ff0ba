/**
 * The local cloud's machines: for every running fake server, the node agent does what cloud-init
 * and the kubelet would do with its user data (read the join token and kubelet flags, TLS-bootstrap,
 * register the Node) and then keeps the Node Ready with status heartbeats and runs its pods
 * (kubeletPods.ts). A server deleted from the
 * fake API stops its heartbeats; the Node object is left to whoever removes it in reality
 * (nodefleet's Node removal). A user data that could not join in reality yields no Node and one log
 * line saying why.
 */
import { kubeletSchema } from "../../components/fleet/fleetSpec";
import { allocatable, formatResources, nodeCapacity, nodeOverheadFor } from "../catalog/instanceTypes";
import { findServerType, shippedCatalog } from "../catalog/serverTypes";
import type { KubeIdentity } from "./kubeClient";
import { type NodeStatusResources, joinAsKubelet, reportReady } from "./kubeletBootstrap";
import { syncNodePods } from "./kubeletPods";
import { readK0sWorkerUserData } from "./workerUserDataReader";
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
export function serverTypeResources(serverType: string): NodeStatusResources | undefined {
  const type = findServerType(shippedCatalog(), serverType);
  if (!type) return undefined;
  const kubelet = kubeletSchema.parse({});
  const capacity = nodeCapacity(type, kubelet);
  return { capacity: formatResources(capacity), allocatable: formatResources(allocatable(capacity, nodeOverheadFor(type, kubelet))) };
}

type Machine = { readonly state: "joining" } | { readonly state: "joined"; readonly nodeName: string; readonly identity: KubeIdentity; readonly resources?: NodeStatusResources; readonly kubeletVersion: string } | { readonly state: "refused"; readonly reason: string };

export class NodeAgent {
  private readonly machines = new Map<number, Machine>();
  private timer?: NodeJS.Timeout;
  private ticking = false;

  constructor(
    private readonly servers: () => readonly FakeServer[],
    private readonly logger: NodeAgentLogger,
    private readonly intervalMs = 2000,
  ) {}

  /** The machine behind a server id (for tests and `local` status output). */
  machine(serverId: number): Machine | undefined {
    return this.machines.get(serverId);
  }

  start(): void {
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
          if (machine.state === "joined") this.logger.info({ serverId: id, node: machine.nodeName }, "server deleted: its kubelet stops");
        }
      }
      await Promise.all(
        [...current.values()].map(async (server) => {
          const machine = this.machines.get(server.id);
          if (server.status !== "running" || machine?.state === "joining" || machine?.state === "refused") return;
          if (machine?.state === "joined") {
            await reportReady(machine.identity, machine.nodeName, machine.resources, machine.kubeletVersion).catch((error: Error) => this.logger.warn({ serverId: server.id, err: error.message }, "heartbeat failed"));
            await syncNodePods(machine.identity, machine.nodeName).catch((error: Error) => this.logger.warn({ serverId: server.id, err: error.message }, "pod sync failed"));
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
      const intent = readK0sWorkerUserData(server.userData);
      const resources = serverTypeResources(server.serverType);
      const identity = await joinAsKubelet({ ...intent, nodeName: intent.hostname, ...(resources ? { resources } : {}) });
      this.machines.set(server.id, { state: "joined", nodeName: intent.hostname, identity, kubeletVersion: intent.kubeletVersion, ...(resources ? { resources } : {}) });
      this.logger.info({ serverId: server.id, server: server.name, node: intent.hostname, providerID: intent.providerID }, "node joined");
    } catch (error) {
      const reason = (error as Error).message;
      this.machines.set(server.id, { state: "refused", reason });
      this.logger.warn({ serverId: server.id, server: server.name, reason }, "the server's user data cannot join the cluster");
    }
  }
}
