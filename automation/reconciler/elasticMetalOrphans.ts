/**
 * The orphan reclaimer's view of Elastic Metal. Every Elastic Metal pool is git's, so a server
 * tagged with the cluster is known while git's stack declares its member, or while a Node of its
 * name is in the cluster (a scale-down committed to git but not yet applied: `pulumi up` drains it
 * first, and the reclaimer must not beat the drain). Anything else, in any Elastic Metal zone, is an
 * orphan: a box ordered by a run that was killed and whose member has since left git's stack, or a
 * pool removed whose delete failed.
 */
import type { FleetSpec } from "../../components/fleet/fleetSpec";
import { OWNERSHIP_LABELS } from "../../components/fleet/nodeMember";
import { elasticMetalMembers } from "../../components/scaleway/elasticMetalPlan";
import { ELASTIC_METAL_ZONES } from "../../components/scaleway/elasticMetalZones";
import { ElasticMetalApi, scalewayAccessFromEnv } from "../scaleway/elasticMetalApi";
import {
  type CloudRequestCounter,
  type InventoryServer,
  OrphanReclaimer,
  type OrphanReclaimerOptions,
  type ServerInventory,
} from "./orphanReclaimer";

/** `key=value` tags as labels (Scaleway tags are plain strings; nodefleet writes its labels so). */
function tagLabels(tags: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const tag of tags) {
    const at = tag.indexOf("=");
    if (at > 0) labels[tag.slice(0, at)] = tag.slice(at + 1);
  }
  return labels;
}

/** The cluster's Elastic Metal servers in every zone; an inventory id is `<zone>/<server id>`. */
export function elasticMetalInventory(api: ElasticMetalApi, zones: readonly string[] = Object.keys(ELASTIC_METAL_ZONES)): ServerInventory {
  return {
    async listClusterServers(clusterId) {
      const tags = [`${OWNERSHIP_LABELS.cluster}=${clusterId}`];
      const perZone = await Promise.all(zones.map((zone) => api.listServers(zone, { tags })));
      return perZone
        .flat()
        .map((s): InventoryServer => ({ id: `${s.zone}/${s.id}`, name: s.name, labels: tagLabels(s.tags), createdAt: s.createdAt }));
    },
    async deleteServer(id) {
      const at = id.indexOf("/");
      await api.deleteServer(id.slice(0, at), id.slice(at + 1));
    },
  };
}

/**
 * The node ids the reclaimer must leave alone: the Elastic Metal members git's stack declares, and
 * those whose Node is in the cluster (`nodeNames`: the cluster's Node names, `<cluster id>-<node id>`).
 */
export function elasticMetalKnownNodes(fleet: FleetSpec, nodeNames: readonly string[]): Set<string> {
  const known = new Set<string>();
  for (const pool of fleet.pools) {
    if (pool.provider !== "scaleway-elastic-metal") continue;
    for (const member of elasticMetalMembers(fleet.cluster, pool)) known.add(member.nodeId);
  }
  const prefix = `${fleet.cluster.id}-`;
  for (const name of nodeNames) if (name.startsWith(prefix)) known.add(name.slice(prefix.length));
  return known;
}

export interface ServiceElasticMetalReclaimerArgs {
  /** SCW_SECRET_KEY, SCW_API_URL and SCW_DEFAULT_PROJECT_ID (without a key there is no reclaimer). */
  readonly env: NodeJS.ProcessEnv;
  /** Git's stack's fleet as the service reads it now. */
  readonly fleet: () => FleetSpec;
  /** The cluster's Nodes (a NodeList); undefined when the stack names no kubeconfig. */
  readonly listNodes: () => Promise<unknown>;
  /** The Hetzner reclaimer's settings: grace, interval, dry run, metrics, logger. */
  readonly options: Omit<OrphanReclaimerOptions, "inventory">;
  readonly metrics: CloudRequestCounter;
}

/** The reclaimer `serve` runs for Elastic Metal; undefined without Scaleway's secret key. */
export function serviceElasticMetalReclaimer(args: ServiceElasticMetalReclaimerArgs): OrphanReclaimer | undefined {
  const access = scalewayAccessFromEnv(args.env);
  if (!access) return undefined;
  const api = new ElasticMetalApi(access, (operation) => args.metrics.cloudRequest("scaleway", operation));
  const reclaimer = new OrphanReclaimer({ ...args.options, cloud: "scaleway-elastic-metal", inventory: elasticMetalInventory(api) });
  reclaimer.knownNodes = async () => {
    const nodes = (await args.listNodes()) as { items?: Array<{ metadata?: { name?: string } }> } | undefined;
    if (nodes === undefined)
      throw new Error("the stack names no kubeconfig, so no Elastic Metal server is reclaimed (its Node cannot be checked)");
    return elasticMetalKnownNodes(
      args.fleet(),
      (nodes.items ?? []).map((n) => n.metadata?.name ?? ""),
    );
  };
  return reclaimer;
}
