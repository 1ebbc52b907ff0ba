/**
 * Learns node capacity from the cluster: lists the cluster's Nodes now and then and records, per
 * server type, image and kubelet settings, the smallest capacity and allocatable Ready Nodes of the
 * API's own members reported (store/learnedCapacities.ts). Instance types and admission then offer
 * those instead of the estimate (catalog/learnedCapacity.ts). Only Nodes that carry this cluster's
 * ownership label and name a member claim of the same pool and server type count (by their
 * providerID `<scheme>:///<cluster>/<node id>`, as the member's kubelet registers it, or by a
 * `nodefleet.io/node` label): a Node of a static pool or of another tool teaches nothing.
 */
import type { Logger } from "pino";
import { OWNERSHIP_LABELS } from "../../components/fleet/nodeMember";
import { kubeletFingerprint, lowered, reportedCapacity, sameCapacity, type LearnedCapacity } from "../catalog/learnedCapacity";
import type { Claim } from "../store/claimStore";
import type { LearnedCapacities, LearnedKey } from "../store/learnedCapacities";
import { errorMessage } from "../../components/shared/errorMessage";

interface NodeItem {
  metadata?: { name?: unknown; labels?: Record<string, unknown> };
  spec?: { providerID?: unknown };
  status?: { capacity?: unknown; allocatable?: unknown; conditions?: Array<{ type?: unknown; status?: unknown }> };
}

/** What one Node taught: its kind and what it reported. */
export interface NodeReport {
  readonly node: string;
  readonly key: LearnedKey;
  readonly reported: LearnedCapacity;
}

/**
 * The member a Node says it is: its `nodefleet.io/node` label, else the last part of its providerID.
 * Checked by the caller against the member's own providerID.
 */
function claimedNodeId(item: NodeItem): string | undefined {
  const label = item.metadata?.labels?.[OWNERSHIP_LABELS.node];
  if (typeof label === "string") return label;
  const providerId = item.spec?.providerID;
  if (typeof providerId !== "string") return undefined;
  const last = providerId.slice(providerId.lastIndexOf("/") + 1);
  return last !== "" ? last : undefined;
}

/** How the watch finds a Node's member: its claim, and the providerID its kubelet registers with (nodeView.ts claimProviderId). */
export interface MemberLookup {
  readonly claimOf: (nodeId: string) => Claim | undefined;
  readonly providerIdOf: (claim: Claim) => string;
}

/**
 * The reports of a Node list (`GET /api/v1/nodes`) that count: Ready Nodes of the cluster whose
 * member claim exists, is not gone, is of the same pool and server type, and whose providerID,
 * once set, is that member's.
 */
export function nodeReports(nodeList: unknown, clusterId: string, members: MemberLookup): NodeReport[] {
  const items = (nodeList as { items?: unknown } | null | undefined)?.items;
  if (!Array.isArray(items)) return [];
  const reports: NodeReport[] = [];
  for (const item of items as Array<NodeItem | null>) {
    if (typeof item !== "object" || item === null) continue;
    const labels = item.metadata?.labels ?? {};
    const name = item.metadata?.name;
    const nodeId = claimedNodeId(item);
    if (typeof name !== "string" || labels[OWNERSHIP_LABELS.cluster] !== clusterId || nodeId === undefined) continue;
    const claim = members.claimOf(nodeId);
    if (!claim || claim.status === "GONE" || labels[OWNERSHIP_LABELS.pool] !== claim.pool) continue;
    const providerId = item.spec?.providerID;
    if (providerId !== undefined && providerId !== members.providerIdOf(claim)) continue;
    const instanceType = labels["node.kubernetes.io/instance-type"];
    if (instanceType !== undefined && instanceType !== claim.snapshot.serverType) continue;
    if (!(item.status?.conditions ?? []).some((c) => c?.type === "Ready" && c.status === "True")) continue;
    const reported = reportedCapacity(item.status ?? {});
    if (!reported) continue;
    const { template, serverType } = claim.snapshot;
    reports.push({ node: name, key: { serverType, image: template.image, kubelet: kubeletFingerprint(template.kubelet) }, reported });
  }
  return reports;
}

export interface NodeCapacityWatchOptions {
  readonly clusterId: string;
  /** The members as they are now, read once per listing (from the embedded store or the shared database). */
  readonly members: () => Promise<MemberLookup>;
  /** Whether the cluster has members whose Nodes may report (no listing otherwise). */
  readonly hasMembers: () => Promise<boolean>;
  readonly learned: LearnedCapacities;
  /** The cluster's Node list, or undefined when the service has no kubeconfig for it. */
  readonly listNodes: () => Promise<unknown>;
  /** Between listings (default 15 s). */
  readonly intervalMs?: number;
  readonly logger?: Logger;
}

export class NodeCapacityWatch {
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<unknown> | undefined;
  private lastError: string | undefined;

  constructor(private readonly options: NodeCapacityWatchOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.poll(), this.options.intervalMs ?? 15_000);
    this.timer.unref();
  }

  /** Stops polling; a listing under way is left to finish (its result is still recorded). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.polling;
  }

  /** One listing, if none is under way: what changed in the store. Never throws; failures are logged once each. */
  async poll(): Promise<readonly NodeReport[]> {
    if (this.polling) return [];
    const run = this.learnOnce();
    this.polling = run;
    try {
      return await run;
    } finally {
      this.polling = undefined;
    }
  }

  private async learnOnce(): Promise<readonly NodeReport[]> {
    const { clusterId, members, learned, logger } = this.options;
    try {
      if (!(await this.options.hasMembers())) return [];
      const list = await this.options.listNodes();
      if (list === undefined) return [];
      const changed: NodeReport[] = [];
      for (const report of nodeReports(list, clusterId, await members())) {
        const known = learned.get(clusterId, report.key);
        if (sameCapacity(known, lowered(known, report.reported))) continue;
        learned.lower(clusterId, report.key, report.reported, report.node);
        changed.push(report);
        logger?.info(
          { ...report.key, node: report.node, allocatable: learned.get(clusterId, report.key)?.allocatable },
          known ? "a Node reported less than learned: offers lowered" : "learned the capacity Nodes of this kind report",
        );
      }
      this.lastError = undefined;
      return changed;
    } catch (error) {
      const message = errorMessage(error);
      if (message !== this.lastError)
        logger?.warn({ err: message }, "reading the cluster's Nodes for their capacity failed; offers keep what is known");
      this.lastError = message;
      return [];
    }
  }
}
