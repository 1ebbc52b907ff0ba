/**
 * For end-to-end tests of static pools on the local cloud: edit a pool in the local stack file, read
 * a pool's servers from the fake Hetzner API and its Nodes from the control plane, and drive a
 * rolling replacement `pulumi up` by `pulumi up`, checking after every run what a rollout promises:
 * never more than `maxSurge` extra servers, never fewer than `members - maxUnavailable` Ready
 * members, and an old server deleted only once its member's replacement was Ready.
 */
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { parseDocument } from "yaml";
import { kube } from "../../automation/local/kubeClient";
import type { LocalCloud } from "../../automation/local/localCloud";
import { runPulumi } from "../../automation/local/localStack";
import { until } from "./until";

export interface PoolServer {
  readonly id: number;
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly server_type: { name: string };
  readonly placement_group: { id: number } | null;
}

export interface PoolNode {
  metadata: { name: string; labels: Record<string, string> };
  spec: { providerID?: string; unschedulable?: boolean; taints?: Array<{ key: string; value?: string; effect: string }> };
  status: {
    conditions?: Array<{ type: string; status: string }>;
    nodeInfo?: { kubeletVersion?: string };
    allocatable?: Record<string, string>;
  };
}

type PoolDocument = Record<string, unknown> & { name: string };

/** Edits one config value of the local stack file as a document, so its comment and secure kubeconfig stay as they are. */
function editStackConfig<T>(cloud: LocalCloud, key: string, edit: (value: T) => T): void {
  const file = cloud.stackFile!;
  const document = parseDocument(readFileSync(file, "utf8"));
  const node = document.getIn(["config", key]) as { toJSON(): T };
  document.setIn(["config", key], document.createNode(edit(node.toJSON())));
  writeFileSync(file, document.toString());
}

/** Changes the local stack file's pools: `edit` gets them and returns the new list. */
export function editLocalPools(cloud: LocalCloud, edit: (pools: PoolDocument[]) => PoolDocument[]): void {
  editStackConfig(cloud, "nodefleet:pools", edit);
}

/** Changes one pool of the local stack file in place. */
export function editLocalPool(cloud: LocalCloud, pool: string, edit: (pool: PoolDocument) => void): void {
  editLocalPools(cloud, (pools) => {
    const found = pools.find((p) => p.name === pool);
    assert.ok(found, `the local stack has a pool ${pool}`);
    edit(found);
    return pools;
  });
}

/** Sets the cluster's k0s version in the local stack file (every pool's members get it). */
export function setLocalK0sVersion(cloud: LocalCloud, version: string): void {
  editStackConfig<Record<string, unknown>>(cloud, "nodefleet:cluster", (cluster) => ({ ...cluster, k0sVersion: version }));
}

/** Sets the cluster's `hcloudProviderIds` in the local stack file (docs/hcloud-ccm.md). */
export function setLocalHcloudProviderIds(cloud: LocalCloud, value: "nodefleet" | "hcloud"): void {
  editStackConfig<Record<string, unknown>>(cloud, "nodefleet:cluster", (cluster) => ({ ...cluster, hcloudProviderIds: value }));
}

/** Sets the cluster network's ipRange in the local stack file. */
export function setLocalNetworkRange(cloud: LocalCloud, ipRange: string): void {
  editStackConfig<Record<string, unknown>>(cloud, "nodefleet:network", (network) => ({ ...network, ipRange }));
}

/** Names the NAT gateway of the local stack's network (`nodefleet:network.natGateway`): pools may then turn public IPv4 off. */
export function setLocalNatGateway(cloud: LocalCloud, natGateway: string): void {
  editStackConfig<Record<string, unknown>>(cloud, "nodefleet:network", (network) => ({ ...network, natGateway }));
}

/**
 * Makes the local cluster ready for pools off the private network (docs/networking.md): nodes
 * register their public address, the CNI encryption is named, the firewall's kubelet rule gains a
 * public source (a documentation address, RFC 5737) and the API server is named by a DNS name its
 * certificate carries instead of a loopback IPv4 address, which the spec refuses for such pools.
 */
export function setLocalPublicAddresses(cloud: LocalCloud): void {
  editStackConfig<Record<string, unknown>>(cloud, "nodefleet:cluster", (cluster) => ({
    ...cluster,
    nodeAddress: "public",
    cniEncryption: "cilium-wireguard",
    controlPlaneAddresses: [...((cluster.controlPlaneAddresses as string[] | undefined) ?? []), "203.0.113.10/32"],
    apiServer: String(cluster.apiServer).replace("//127.0.0.1:", "//localhost:"),
  }));
}

/** Authenticated GET against the fake Hetzner API. */
export async function hcloudGet(cloud: LocalCloud, path: string): Promise<Record<string, any>> {
  const response = await fetch(`${cloud.env.HCLOUD_ENDPOINT}${path}`, { headers: { Authorization: `Bearer ${cloud.env.HCLOUD_TOKEN}` } });
  return (await response.json()) as Record<string, any>;
}

/** Every server of the fake API, page after page, whatever its labels: what an orphan check compares. */
export async function allServers(cloud: LocalCloud): Promise<PoolServer[]> {
  const servers: PoolServer[] = [];
  for (let page: number | null = 1; page !== null;) {
    const body = await hcloudGet(cloud, `/servers?page=${page}&per_page=25`);
    servers.push(...(body.servers as PoolServer[]));
    page = (body.meta as { pagination: { next_page: number | null } }).pagination.next_page;
  }
  return servers;
}

export async function poolServers(cloud: LocalCloud, pool: string): Promise<PoolServer[]> {
  return (await hcloudGet(cloud, `/servers?label_selector=nodefleet.io/pool=${pool}&per_page=50`)).servers as PoolServer[];
}

export async function poolNodes(cloud: LocalCloud, pool: string): Promise<PoolNode[]> {
  return (
    (await kube(cloud.plane.admin, "GET", `/api/v1/nodes?labelSelector=node.kubernetes.io%2Fpool%3D${pool}`)) as { items: PoolNode[] }
  ).items;
}

export const isReady = (node: PoolNode) => node.status.conditions?.some((c) => c.type === "Ready" && c.status === "True") === true;

/** Names of the Ready Nodes among `servers` (a Node is named as its server). */
async function readyServerNames(cloud: LocalCloud, pool: string, servers: readonly PoolServer[]): Promise<Set<string>> {
  const ready = new Set((await poolNodes(cloud, pool)).filter(isReady).map((n) => n.metadata.name));
  return new Set(servers.filter((s) => ready.has(s.name)).map((s) => s.name));
}

/** Waits until every server of the pool has a Ready Node; returns the servers. */
export async function allPoolServersReady(cloud: LocalCloud, pool: string, timeoutMs = 180_000): Promise<PoolServer[]> {
  return until(
    `every ${pool} server's Node Ready`,
    async () => {
      const servers = await poolServers(cloud, pool);
      const ready = await readyServerNames(cloud, pool, servers);
      return servers.every((s) => ready.has(s.name)) ? servers : undefined;
    },
    timeoutMs,
  );
}

export const UP = ["up", "--stack", "local", "--yes", "--skip-preview", "--non-interactive"];

export interface RolloutObservation {
  /** The pool's server names after each run. */
  readonly serversAfterRun: string[][];
  /** Old servers each run deleted. */
  readonly deletedByRun: string[][];
}

export interface RolloutDrive {
  readonly cloud: LocalCloud;
  readonly project: string;
  readonly pool: string;
  readonly members: number;
  readonly maxSurge: number;
  readonly maxUnavailable: number;
  /** Whether a server is of the generation the change rolls to. */
  readonly isNew: (server: PoolServer) => boolean;
  /** Stop with an error after this many runs. */
  readonly maxRuns: number;
  /** Called after each run with the servers present, before waiting for readiness. */
  readonly afterRun?: (run: number, servers: readonly PoolServer[]) => Promise<void>;
}

/**
 * Runs `pulumi up` until the pool has `members` servers, all new, checking the rollout's promises
 * after every run, and waiting between runs until the new servers' Nodes are Ready (what lets the
 * next run delete their predecessors).
 */
export async function driveRollout(drive: RolloutDrive): Promise<RolloutObservation> {
  const { cloud, pool } = drive;
  const serversAfterRun: string[][] = [];
  const deletedByRun: string[][] = [];
  let before = await poolServers(cloud, pool);
  for (let run = 1; ; run++) {
    assert.ok(run <= drive.maxRuns, `the rollout settles within ${drive.maxRuns} runs; after them: ${JSON.stringify(serversAfterRun)}`);
    const readyBefore = await readyServerNames(cloud, pool, before);
    await runPulumi(UP, drive.project, cloud.env);
    const after = await poolServers(cloud, pool);
    serversAfterRun.push(after.map((s) => s.name).sort());
    const deleted = before.filter((s) => !after.some((a) => a.id === s.id));
    deletedByRun.push(deleted.map((s) => s.name).sort());

    assert.ok(
      after.length <= drive.members + drive.maxSurge,
      `run ${run}: ${after.length} servers, at most ${drive.members} + maxSurge ${drive.maxSurge}`,
    );
    for (const gone of deleted) {
      const member = gone.labels["nodefleet.io/node"];
      const replacement = before.find((s) => s.id !== gone.id && s.labels["nodefleet.io/node"] === member && drive.isNew(s));
      assert.ok(replacement && readyBefore.has(replacement.name), `run ${run} deleted ${gone.name} only after its replacement was Ready`);
    }
    const readyMembers = new Set(after.filter((s) => readyBefore.has(s.name)).map((s) => s.labels["nodefleet.io/node"]));
    assert.ok(
      readyMembers.size >= drive.members - drive.maxUnavailable,
      `run ${run}: ${readyMembers.size} members Ready, at least ${drive.members} - maxUnavailable ${drive.maxUnavailable}`,
    );
    await drive.afterRun?.(run, after);

    if (after.length === drive.members && after.every(drive.isNew)) {
      await allPoolServersReady(cloud, pool);
      return { serversAfterRun, deletedByRun };
    }
    before = await allPoolServersReady(cloud, pool);
  }
}
